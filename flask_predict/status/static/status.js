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

  // The server's JSON: NaN, Infinity and -Infinity are numbers (outside strings), as in the
  // README's requests (NaN for a missing value) and in TF Serving's answers. JSON.parse and
  // JSON.stringify know none of them: they travel as marked strings in between.
  const NON_FINITE = /("(?:[^"\\]|\\.)*")|(-?Infinity|NaN)/g;
  const MARK = "\u0000non-finite:";

  function parseJson(text) {
    const marked = text.replace(NON_FINITE, (match, string, token) =>
      string !== undefined ? string : JSON.stringify(MARK + token));
    return JSON.parse(marked, (key, value) =>
      typeof value === "string" && value.startsWith(MARK) ? Number(value.slice(MARK.length))
        : value);
  }

  function printJson(value, indent) {
    const text = JSON.stringify(value, (key, item) =>
      typeof item === "number" && !Number.isFinite(item) ? MARK + String(item) : item, indent);
    return text.replace(/"\\u0000non-finite:(-?Infinity|NaN)"/g, "$1");
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
    // a table's columns (one value per row each): one object naming them
    const columns = model.inputs.length > 1 && model.inputs.every(
      (input) => input.shape && input.shape.length === 1);
    if (columns) {
      return JSON.stringify([Object.fromEntries(model.inputs.map(
        (input) => [input.name, input.datatype === "BYTES" ? "" : 0]))]);
    }
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

  // The request and its answer are shown together, all four parts each time: nothing of an
  // earlier exchange stays beside a new one.
  function show(requestLine, requestBody, status, text) {
    document.getElementById("exchange").hidden = false;
    document.getElementById("request-line").textContent = requestLine;
    document.getElementById("request-body").textContent = requestBody;
    statusField.textContent = status;
    answerField.textContent = text;
  }
  let sent = 0; // the latest request: an earlier one's late answer is not shown

  modelField.addEventListener("change", () => {
    instancesField.value = exampleRows(byName[modelField.value]);
  });
  if (modelField.value) instancesField.value = exampleRows(byName[modelField.value]);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const number = ++sent;
    let rows;
    try {
      rows = parseJson(instancesField.value);
    } catch (error) {
      show("", "", "not sent", "The instances are not JSON: " + error.message);
      return;
    }
    if (!Array.isArray(rows)) rows = [rows];
    const [url, body] = build(protocolField.value, byName[modelField.value], rows);
    const line = "POST " + url;
    const text = printJson(body);
    show(line, text, "sending", "");
    try {
      const answer = await fetch(url, {method: "POST", body: text,
                                       headers: {"Content-Type": "application/json"}});
      const received = await answer.text();
      let shown = received;
      try {
        shown = printJson(parseJson(received), 2);
      } catch (error) {
        // not JSON: show it as it came
      }
      if (number === sent) show(line, text, `${answer.status} ${answer.statusText}`.trim(), shown);
    } catch (error) {
      if (number === sent) show(line, text, "not sent", "The request failed: " + String(error));
    }
    poll();
  });

  poll();
  setInterval(poll, 2000);
})();
