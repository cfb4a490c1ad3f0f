"""`make demo` (kipwire.demo): KIP-966's story at reduced size, its table and report."""

from __future__ import annotations

import base64
import html
import io
import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from kipwire import demo

RECORDS = 200
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[demo.DemoRun, str]:
    """One demo run for the module (local engine: the Spark decode has its own tests)."""
    out = tmp_path_factory.mktemp("demo-out")
    printed = io.StringIO()
    result = demo.run(out, RECORDS, demo.Progress(printed), spark=False)
    return result, printed.getvalue()


def test_elr_on_keeps_every_acknowledged_record(run):
    result, _ = run
    assert result.on.acked >= RECORDS // 4  # the first quarter is acked before any fault
    assert result.on.lost == 0
    assert result.on.read >= result.on.acked


def test_elr_off_loses_acknowledged_records(run):
    result, _ = run
    # the re-elected last ISR member lost its unflushed log; the followers truncate to it
    assert result.off.lost >= 1
    assert result.off.read < result.off.acked


def test_elections_come_from_the_controller(run):
    result, _ = run
    # ELR on: the ELR member back is elected; ELR off: only the emptied last ISR member can lead
    assert result.on.elections == {"clean": 0, "ELR": 1, "unclean": 0}
    assert result.off.elections == {"clean": 1, "ELR": 0, "unclean": 0}


def test_producer_saw_not_enough_replicas_under_min_isr(run):
    result, _ = run
    for story in (result.on, result.off):
        assert story.not_enough_replicas > 0
        assert story.under_min_isr_s > 1.0  # sampled every 0.1 s over a 1.5 s window and more


def test_table_prints_both_runs_side_by_side(run):
    result, printed = run
    table = demo.format_table(result.on, result.off)
    assert table in printed
    lines = {line.split("  ")[0]: line.split() for line in table.splitlines()[1:]}
    acked = lines["records acknowledged"]
    assert acked[-2:] == [str(result.on.acked), str(result.off.acked)]
    ner = lines["NOT_ENOUGH_REPLICAS seen by the producer"]
    assert ner[-2:] == [str(result.on.not_enough_replicas), str(result.off.not_enough_replicas)]


def test_every_step_is_one_line_and_the_timeline_follows_the_kip(run):
    result, printed = run
    for n in range(1, 6):
        assert f"{n}/5 " in printed
    assert "\r" not in printed  # not a terminal: plain lines only
    on = "\n".join(result.on.timeline)
    assert "ELR []" in result.on.timeline[0]
    assert "leader -1" in result.on.timeline[3]
    # the ELR member is elected in the ELR-on run; with ELR off it finds no leadership
    second = int(result.on.timeline[2].split("follower ")[1].split()[0])
    assert f"T4 broker {second} back; leader {second}" in on
    assert "T4" in result.off.timeline[4] and "leader -1" in result.off.timeline[4]


def test_report_names_the_elr_difference(run):
    result, _ = run
    diff = json.loads(result.report.with_name("diff.json").read_text())
    meta = {d["path"]: d for d in diff["differences"] if d["kind"] == "metadata"}
    elr = meta["PartitionChangeRecord.eligible_leader_replicas"]
    assert any(elr["baseline"]) and not any(elr["candidate"])
    assert (
        meta["PartitionChangeRecord.leader"]["baseline"]
        != (meta["PartitionChangeRecord.leader"]["candidate"])
    )
    page = result.report.read_text()
    assert "Controller partition records (KIP-966 ELR fields)" in page
    assert "eligible_leader_replicas" in page
    assert "NOT_ENOUGH_REPLICAS" in page  # the errors the client saw, both sides


def test_semantic_headline_leads_with_the_lost_records_and_the_unclean_election(run):
    result, _ = run
    diff = json.loads(result.report.with_name("diff.json").read_text())
    sem = diff["semantic_differences"]
    assert [d["kind"] for d in sem[:2]] == ["acknowledged_lost", "election"]
    lost, election = sem[0], sem[1]
    readable_off = result.off.acked - result.off.lost
    assert (lost["baseline"], lost["candidate"]) == (result.on.acked, readable_off)
    assert lost["summary"] == (
        f"acknowledged records readable on kip966-story-0: {result.on.acked:,} of "
        f"{result.on.acked:,} vs {readable_off:,} of {result.off.acked:,}"
    )
    assert (election["baseline"], election["candidate"]) == ("ELR", "unclean")
    assert election["summary"] == "leader elected from ELR vs unclean on kip966-story-0"
    # the Python API says the same, in the same order
    from kipwire.captures import SemanticDifference, compare

    found = compare(result.decoded[0], result.decoded[1]).semantic_differences
    assert all(isinstance(d, SemanticDifference) for d in found)
    assert [d.summary for d in found] == [d["summary"] for d in sem]


def test_report_opens_with_the_timeline_then_the_semantic_differences(run):
    result, _ = run
    page = result.report.read_text()
    first_img = page.index("<img ")
    assert page.index('alt="Timeline of kip966-story-0') == page.index("alt=", first_img)
    headline = page.index("<h2>Semantic differences, most important first</h2>")
    assert first_img < headline < page.index("<h2>Functional differences</h2>")
    assert page.index("leader elected from ELR vs unclean") < page.index("<h2>Request mix</h2>")
    md = result.report.with_suffix(".md").read_text()
    assert md.index("](timeline_kip966-story-0.png)") < md.index("## Semantic differences")
    # the picture decodes and is drawn on: both lanes' state bands, ticks and labels
    png = result.report.with_name("timeline_kip966-story-0.png").read_bytes()
    width, height = struct.unpack(">II", png[16:24])
    idat, pos = b"", 8
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos : pos + 8])
        idat += png[pos + 8 : pos + 8 + n] if kind == b"IDAT" else b""
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = 1 + 3 * width
    assert len(raw) == height * stride
    white = b"\xff\xff\xff"
    inked = sum(
        raw[y * stride + 1 + 3 * x : y * stride + 4 + 3 * x] != white
        for y in range(height)
        for x in range(width)
    )
    assert inked > width * height // 10


def test_report_counts_the_producer_errors_the_demo_counted(run):
    """The report's decode (Parquet tables) and the demo's (in process) agree on the errors."""
    result, _ = run
    page = result.report.read_text()
    rows = re.findall(
        r"<tr><td>Produce</td><td>kipwire-demo-producer</td><td>(\d+) NOT_ENOUGH_REPLICAS\w*</td>"
        r"<td>(\d+)</td><td>(\d+)</td></tr>",
        page,
    )
    assert {code for code, _, _ in rows} <= {"19", "20"} and rows
    assert sum(int(b) for _, b, _ in rows) == result.on.not_enough_replicas
    assert sum(int(c) for _, _, c in rows) == result.off.not_enough_replicas


def test_a_failing_step_is_named(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(demo.StepFailed, match="preparing the output folder failed"):
        demo.run(blocker, 8, demo.Progress(io.StringIO()), spark=False)


def test_cli_refuses_too_few_records(capsys):
    assert demo.main(["--records", "3", "--out", "unused"]) == 2
    assert "--records must be at least 4" in capsys.readouterr().err


def test_cli_exits_non_zero_naming_the_failed_step(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert demo.main(["--quick", "--out", str(blocker)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kipwire demo: preparing the output folder failed")
    assert "Traceback" not in err


# -- the report in a browser -------------------------------------------------------------------

# Added to a copy of the report: records failed loads, then on load (every image loaded) measures
# each <img> (natural and rendered size, inked pixels on a canvas) into <pre id="probe"> as JSON.
PROBE_HEAD = """<script>
window.failed = [];
addEventListener("error", e => { if (e.target !== window) failed.push(e.target.src || "?"); },
                 true);
</script>"""
PROBE_BODY = """<pre id="probe"></pre><script>
addEventListener("load", () => {
  const out = {failed, images: [], resources: performance.getEntriesByType("resource").length};
  for (const img of document.images) {
    if (!img.complete || !img.naturalWidth) { out.images.push({error: "not decoded"}); continue; }
    const box = img.getBoundingClientRect();
    const c = document.createElement("canvas");
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    const g = c.getContext("2d");
    g.drawImage(img, 0, 0);
    const px = g.getImageData(0, 0, c.width, c.height).data;
    let inked = 0;
    for (let i = 0; i < px.length; i += 4) if (px[i] + px[i + 1] + px[i + 2] < 600) inked++;
    out.images.push({w: img.naturalWidth, h: img.naturalHeight, shown_w: box.width,
                     shown_h: box.height, inked});
  }
  document.getElementById("probe").textContent = JSON.stringify(out);
});
</script>"""


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _probe(tmp_path: Path, page: str, name: str) -> dict:
    probed = tmp_path / name
    probed.write_text(
        page.replace("</head>", PROBE_HEAD + "</head>", 1).replace(
            "</body>", PROBE_BODY + "</body>", 1
        )
    )
    done = _chromium(tmp_path, "--dump-dom", probed.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found and found.group(1), "the probe did not run"
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.skipif(
    shutil.which(CHROMIUM) is None, reason=f"{CHROMIUM} is not installed (.ci/run installs it)"
)
def test_report_renders_in_headless_chromium(run, tmp_path):
    result, _ = run
    page = result.report.read_text()
    # self-contained: every plot is a data: URI and nothing names another origin
    assert re.search(r"""(src|href)=["'](?!data:)""", page) is None
    plots = page.count("<img ")
    assert plots >= 2

    probe = _probe(tmp_path, page, "report-probe.html")
    assert probe["failed"] == [] and probe["resources"] == 0
    assert len(probe["images"]) == plots
    for img in probe["images"]:
        assert "error" not in img, img
        assert img["w"] > 0 and img["h"] > 0 and img["shown_w"] > 0 and img["shown_h"] > 0
        assert img["inked"] > img["w"]  # axes, bars and labels: more than a stray line

    shot = tmp_path / "report.png"
    done = _chromium(
        tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", result.report.as_uri()
    )
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    # the screenshot, measured by the same probe: Chromium decodes it, a canvas counts its ink
    uri = "data:image/png;base64," + base64.b64encode(shot.read_bytes()).decode()
    holder = f'<!DOCTYPE html><html><head></head><body><img src="{uri}"></body></html>'
    (screen,) = _probe(tmp_path, holder, "screenshot-probe.html")["images"]
    assert (screen["w"], screen["h"]) == (1280, 2000)
    assert screen["inked"] > 1280 * 2000 // 100  # text, tables and the first plots


# -- progress and the decode fallback ------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_rewrites_one_live_line_on_a_terminal():
    screen = _Terminal()
    progress = demo.Progress(screen)
    progress.status("acked 1/4")
    progress.status("acked 2/4")
    progress.step("T1 follower lost")
    out = screen.getvalue()
    assert out.count("\n") == 1 and out.endswith("T1 follower lost\n")
    # each new status first blanks the previous one, with a carriage return
    assert out.startswith("acked 1/4\r" + " " * 9 + "\racked 2/4\r")


def test_progress_prints_no_live_line_elsewhere():
    plain = io.StringIO()
    progress = demo.Progress(plain)
    progress.status("acked 1/4")
    progress.step("T1 follower lost")
    assert plain.getvalue() == "T1 follower lost\n"


def test_decode_falls_back_to_the_local_engine_when_spark_cannot_start(run, tmp_path, monkeypatch):
    from kipwire.captures.engines import spark_job

    def no_java(*_args, **_kwargs):
        raise RuntimeError("Java gateway process exited before sending its port number")

    monkeypatch.setattr(spark_job, "session", no_java)
    result, _ = run
    said = io.StringIO()
    engine, dirs = demo.decode_captures([result.on.capture], tmp_path, demo.Progress(said))
    assert engine == "local"
    assert said.getvalue() == (
        "    Spark cannot start (Java gateway process exited before sending its port number); "
        "decoding with the local engine instead\n"
    )
    assert (dirs[0] / "pdus").is_dir()
