"""``flask predict ...``: the command line of an app that embeds the extension.

:meth:`flask_predict.FlaskPredict.init_app` adds this group to ``app.cli`` (unless the app
has a ``predict`` command of its own): ``flask --app myapp predict models`` lists what the
app serves; ``check`` and ``demo`` are the same as ``flask-predict``'s.
"""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import AppGroup

from ..models import check as checking

predict_group = AppGroup("predict", help="Models served by flask-predict.")


@predict_group.command("models")
def models() -> None:
    """List the app's models, their versions and their state."""
    from .current import get_state

    for served in get_state().service.models():
        states = ", ".join(f"{number}: {status.state}"
                           for number, status in sorted(served.statuses.items()))
        platforms = sorted({loaded.metadata.platform for loaded in served.versions.values()})
        click.echo(f"{served.name}  {'/'.join(platforms) or '-'}  {served.spec.base_path}  "
                   f"versions {{{states}}}")


@predict_group.command("check", with_appcontext=False)
@click.argument("path", type=click.Path())
@click.option("--model_name", help="The model's name (default: the folder's name).")
@click.option("--predictor", help="The plugin to use (default: detected from the files).")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="A setting of the model, as in the model config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check(path: str, model_name: str | None, predictor: str | None, options: tuple[str, ...],
          as_json: bool) -> None:
    """Load a model base path or a model config file as the server would, and describe it."""
    try:
        parsed = checking.parse_options(list(options))
    except ValueError as exc:
        raise click.UsageError(str(exc))
    report = checking.check(path, predictor, parsed, model_name)
    click.echo(checking.as_json(report) if as_json else checking.render(report))
    if not report.ok:
        raise click.exceptions.Exit(1)


@predict_group.command("demo", with_appcontext=False)
@click.argument("directory", default="demo/models", type=click.Path(file_okay=False))
def demo(directory: str) -> None:
    """Write the demo models and their models.json."""
    from ..models.demo import write_demo

    write_demo(Path(directory), echo=click.echo)
