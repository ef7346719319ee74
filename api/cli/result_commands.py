"""``jobledger results get ID``: a job's results written to local files, each checked against the
SHA-256 the ledger holds for it.

``--dir DIR`` (the default, ``.``) writes each result under its name in DIR, one download each;
``--zip FILE`` writes them all as one zip.  A result already in DIR is replaced.  Either way a
file whose bytes do not hash to its SHA-256 is not kept, and the command ends with exit 1.  A name
from the server that would land outside DIR (``../x``, an absolute path) is refused before anything
is written (exit 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jobledger.cli.common import fail
from jobledger.cli.http import AsJson, UrlOption, connected
from jobledger.cli.output import Output
from jobledger.client.destinations import UnsafeName, inside

app = typer.Typer(help="A job's results: the files its worker gave back.", no_args_is_help=True)


@app.command()
def get(
    job_id: Annotated[int, typer.Argument(metavar="ID", help="The job's id.")],
    directory: Annotated[
        Path | None, typer.Option("--dir", metavar="DIR", file_okay=False, help="Write each result here.")
    ] = None,
    zip_file: Annotated[
        Path | None, typer.Option("--zip", metavar="FILE", dir_okay=False, help="Write them all as one zip.")
    ] = None,
    url: UrlOption = None,
    as_json: AsJson = False,
) -> None:
    """Download a job's results, each checked against its SHA-256 (default: into the current directory)."""
    out = Output(as_json)
    if directory is not None and zip_file is not None:
        fail("give --dir or --zip, not both", code=2)
    with connected(url) as client:
        if zip_file is not None:
            path = client.download_results_zip(job_id, zip_file)
            if out.is_json:
                return out.json({"id": job_id, "zip": str(path)})
            return out.note(f"wrote the results of job [bold]{job_id}[/] to [bold]{path}[/]", str(path))
        target = directory if directory is not None else Path(".")
        target.mkdir(parents=True, exist_ok=True)
        manifest = client.results(job_id)
        try:
            where = [(r["name"], inside(target, r["name"])) for r in manifest["results"]]
        except UnsafeName as exc:
            fail(f"{exc.message}; nothing was written")
        written = [client.download_result(job_id, name, path) for name, path in where]
    if out.is_json:
        return out.json({"id": job_id, "status": manifest["status"], "files": [str(p) for p in written]})
    if not written:
        return out.note(f"job [bold]{job_id}[/] ({manifest['status']}) has no results", "")
    for path in written:
        out.note(f"wrote [bold]{path}[/]", str(path))
