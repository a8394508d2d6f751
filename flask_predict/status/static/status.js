// The status page's live figures and its form. No framework, no build step.
"use strict";
(function () {
  const page = document.body;
  const prefix = page.dataset.prefix || "";
  const models = JSON.parse(document.getElementById("model-data").textContent);
  const byName = Object.fromEntries(models.map((model) => [model.name, model]));
  // each protocol's predict request, as its descriptor writes it: {path, body} templates
  const tryRequests = JSON.parse(document.getElementById("try-data").textContent);
  let previous = null;

  function setCells(kind, model, text) {
    for (const cell of document.querySelectorAll(`td.${kind}`)) {
      if (cell.dataset.model === model) cell.textContent = text;
    }
  }

  // Counters only grow: a rate is the difference of two polls over the time between them.
  async function poll() {
    if (page.dataset.metrics !== "on") return;
    let status;
    try {
      const answer = await fetch(page.dataset.statusUrl, {headers: {Accept: "application/json"}});
      if (!answer.ok) return;
      status = await answer.json();
    } catch (error) {
      return; // the next poll tries again
    }
    for (const model of status.models) {
      const totals = model.totals;
      if (!totals) continue;
      setCells("requests", model.name,
               totals.requests + (totals.failed ? ` (${totals.failed} failed)` : ""));
      const before = previous && previous.models[model.name];
      if (!before) continue;
      const seconds = status.time - previous.time;
      const count = totals.requests - before.requests;
      setCells("rate", model.name, seconds > 0 ? (count / seconds).toFixed(1) : "-");
      setCells("latency", model.name, count > 0
        ? ((1000 * (totals.seconds - before.seconds)) / count).toFixed(2) + " ms" : "-");
    }
    previous = {time: status.time,
                models: Object.fromEntries(status.models.map((m) => [m.name, m.totals]))};
  }

  function shapeOf(value) {
    const shape = [];
    while (Array.isArray(value)) {
      shape.push(value.length);
      value = value[0];
    }
    return shape;
  }

  // A body template with its markers filled in.
  function fill(template, values) {
    if (typeof template === "string") {
      return Object.prototype.hasOwnProperty.call(values, template) ? values[template] : template;
    }
    if (Array.isArray(template)) return template.map((item) => fill(item, values));
    if (template && typeof template === "object") {
      return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fill(v, values)]));
    }
    return template;
  }

  // The same rows, as each protocol's predict request: [url, body].
  function build(protocol, model, rows) {
    const template = tryRequests[protocol];
    const input = model.inputs[0] || {name: "input-0", datatype: "FP64"};
    const path = template.path.replace("{model}", encodeURIComponent(model.name));
    return [`${prefix}${path}`, fill(template.body, {
      $rows: rows, $flat: rows.flat(Infinity), $shape: shapeOf(rows), $input: input.name,
      $datatype: input.datatype, $model: model.name})];
  }

  function exampleRows(model) {
    const shape = model.inputs.length ? model.inputs[0].shape : null;
    const width = shape && shape.length === 2 && shape[1] > 0 ? shape[1] : 1;
    return JSON.stringify([new Array(width).fill(0)]);
  }

  const form = document.getElementById("try");
  const modelField = document.getElementById("model");
  const protocolField = document.getElementById("protocol");
  const instancesField = document.getElementById("instances");
  const answerField = document.getElementById("answer");
  const statusField = document.getElementById("answer-status");

  function show(status, text) {
    document.getElementById("exchange").hidden = false;
    statusField.textContent = status;
    answerField.textContent = text;
  }

  modelField.addEventListener("change", () => {
    instancesField.value = exampleRows(byName[modelField.value]);
  });
  if (modelField.value) instancesField.value = exampleRows(byName[modelField.value]);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let rows;
    try {
      rows = JSON.parse(instancesField.value);
    } catch (error) {
      show("not sent", "The instances are not JSON: " + error.message);
      return;
    }
    if (!Array.isArray(rows)) rows = [rows];
    const [url, body] = build(protocolField.value, byName[modelField.value], rows);
    document.getElementById("request-line").textContent = "POST " + url;
    document.getElementById("request-body").textContent = JSON.stringify(body);
    show("sending", "");
    try {
      const answer = await fetch(url, {method: "POST", body: JSON.stringify(body),
                                       headers: {"Content-Type": "application/json"}});
      const text = await answer.text();
      let shown = text;
      try {
        shown = JSON.stringify(JSON.parse(text), null, 2);
      } catch (error) {
        // not strict JSON (TF Serving may print NaN): show it as it came
      }
      show(`${answer.status} ${answer.statusText}`.trim(), shown);
    } catch (error) {
      show("failed", String(error));
    }
    poll();
  });

  poll();
  setInterval(poll, 2000);
})();
