"""``rpp help [TOPIC]``: what a command's short help leaves out, described once (the input
options every evaluating command shares), or a command's help."""
from __future__ import annotations

import click

from ..options import input_params

TOPICS = ("inputs",)


@click.command("help")
@click.argument("topic", required=False, metavar="[inputs|COMMAND]")
@click.pass_context
def help_command(ctx: click.Context, topic: str | None) -> None:
    """Describe the input options eval, compare, check, meta and levels share (rpp help
    inputs), or a command (rpp help eval, as rpp eval --help)."""
    group = ctx.parent.command if ctx.parent else None
    if topic == "inputs":
        click.echo(_inputs_help(ctx), nl=False)
        return
    if topic is None or not isinstance(group, click.Group):
        click.echo((ctx.parent or ctx).get_help())
        return
    command = group.get_command(ctx, topic)
    if command is None:
        raise click.UsageError(f"no help topic '{topic}': inputs, or one of the commands "
                               f"({', '.join(group.list_commands(ctx))})", ctx)
    with click.Context(command, info_name=topic, parent=ctx.parent) as sub:
        click.echo(command.get_help(sub))


def _inputs_help(ctx: click.Context) -> str:
    """The input options' full help, as a command's Options section prints them."""
    inputs = click.Command("inputs", params=input_params())
    formatter = ctx.make_formatter()
    formatter.write_paragraph()
    formatter.write_text("Input options of rpp eval, compare, check, meta and levels (after the "
                         "command: rpp eval -l 2 QRELS RUN...); docs/cli.md has each in full.")
    with click.Context(inputs, parent=ctx) as sub:
        inputs.format_options(sub, formatter)
    return formatter.getvalue()
