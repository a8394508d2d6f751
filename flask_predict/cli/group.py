"""``flask predict ...``: the command line of an app that embeds the extension.

:meth:`flask_predict.FlaskPredict.init_app` adds this group to ``app.cli`` (unless the app
has a ``predict`` command of its own): ``flask --app myapp predict models`` lists what the
app serves; ``check`` and ``demo`` are the same as ``flask-predict``'s.
"""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import AppGroup

from . import check as checking

predict_group = AppGroup("predict", help="Models served by flask-predict.")


@predict_group.command("models")
def models() -> None:
    """List the app's models, their versions and their state."""
    from ..current import get_state

    for served in get_state().service.models():
        states = ", ".join(f"{number}: {status.state}"
                           for number, status in sorted(served.statuses.items()))
        platforms = sorted({loaded.metadata.platform for loaded in served.versions.values()})
        click.echo(f"{served.name}  {'/'.join(platforms) or '-'}  {served.spec.base_path}  "
                   f"versions {{{states}}}")


@predict_group.command("check", with_appcontext=False)
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--predictor", help="The plugin to use (default: detected from the files).")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="An option for the plugin's from_path, as in the model config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check(directory: str, predictor: str | None, options: tuple[str, ...],
          as_json: bool) -> None:
    """Say which plugin takes a version folder, whether it loads, and its metadata."""
    try:
        parsed = checking.parse_options(list(options))
    except ValueError as exc:
        raise click.UsageError(str(exc))
    results = checking.check_path(directory, predictor, parsed)
    click.echo(checking.as_json(results) if as_json else checking.render(results))
    if not all(result.loaded for result in results):
        raise click.exceptions.Exit(1)


@predict_group.command("demo", with_appcontext=False)
@click.argument("directory", default="demo/models", type=click.Path(file_okay=False))
def demo(directory: str) -> None:
    """Write the demo models and their models.json."""
    from ..demo import write_demo

    write_demo(Path(directory), echo=click.echo)
