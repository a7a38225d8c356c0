"""The HTML page (--html) as a person meets it: in a real headless Chromium, driven by Selenium.

Each page is written by the command line and checked against the report's own JSON record: it loads with
no console error, every chart draws one SVG point per kernel, step, measured point or sweep point, hovering a
point shows that kernel's tooltip, and the tables sort when a header is clicked and filter as you type.
Five page loads in one browser. Without Debian's chromium and chromium-driver the browser tests are skipped
(.ci/run installs them).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roofcalc.cli import main

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
EXAMPLE = ["TinyLlama/TinyLlama-1.1B", "--measured-bw", "270GB/s", "--measured-flops", "50TFLOP/s", "--tpot", "15ms"]
no_browser = not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER))
browser_test = pytest.mark.skipif(no_browser, reason=f"needs {CHROMIUM} and {CHROMEDRIVER}: apt-get install "
                                                     "chromium chromium-driver (.ci/run does)")


def run(args, capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def record(args, capsys) -> dict:
    code, out, err = run(args + ["--format", "json"], capsys)
    assert code == 0, err
    return json.loads(out)


def write(args, path: Path, capsys) -> str:
    code, out, err = run(args + ["--html", str(path)], capsys)
    assert code == 0 and err == "", err
    assert f"html      written to {path}" in out
    return out


# --------------------------------------------------------------------------- without a browser


def test_the_main_job_never_imports_plotly():
    code = ("import sys, io, contextlib\nfrom roofcalc.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['TinyLlama/TinyLlama-1.1B', '--batch', '1,8'])\n"
            "print('plotly' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_without_plotly_html_fails_in_one_line_naming_the_extra(monkeypatch, tmp_path, capsys):
    for name in [m for m in sys.modules if m == "plotly" or m.startswith("plotly.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly raises ImportError
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--html", str(tmp_path / "p.html")], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "pip install '.[html]' in roofcalc's checkout" in err
    assert not (tmp_path / "p.html").exists()


@pytest.mark.parametrize("name, words", [("p.txt", "must end in .html"), ("no/such/p.html", "does not exist"),
                                         (" ", "--html is empty"), ("", "--html is empty")])
def test_bad_html_path_is_one_line(tmp_path, capsys, name, words):
    path = name if not name.strip() else str(tmp_path / name)
    code, out, err = run(["TinyLlama/TinyLlama-1.1B", "--html", path], capsys)
    assert code == 2 and err.count("\n") == 1 and words in err


def test_the_page_is_one_file_that_needs_no_network(tmp_path, capsys):
    pytest.importorskip("plotly")
    page = tmp_path / "p.html"
    write(EXAMPLE, page, capsys)
    text = page.read_text(encoding="utf-8")
    start = text.index("<script>/**")  # plotly.js, inline in the head
    assert "plotly.js" in text[start:start + 100]
    rest = text[:start] + text[text.index("</script>", start):]  # the page around the bundle
    assert re.findall(r"<[a-z]+[^>]*\s(?:src|href)=", rest) == [] and "http" not in rest
    doc = record(EXAMPLE, capsys)
    for line in ("roof      nominal  320 GB/s, 65 TFLOP/s, ridge 203 FLOP/byte",
                 "memory    2.2 GB of weights + 11.3 MB of KV cache (1 x 500 positions) = 2.21 GB: fits in 16 GiB"):
        assert line in text  # the report's own header lines
    assert f"{doc['step']['flops']:,}" in text


# --------------------------------------------------------------------------- in the browser


@pytest.fixture(scope="module")
def browser():
    if no_browser:
        pytest.skip(f"needs {CHROMIUM} and {CHROMEDRIVER}")
    webdriver = pytest.importorskip("selenium.webdriver")
    pytest.importorskip("plotly")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def load(driver, path: Path) -> None:
    """Open the page and wait until every chart is drawn; no console error on the way."""
    driver.get_log("browser")  # drop what an earlier page logged
    driver.get(path.as_uri())
    end = time.time() + 60
    while not driver.execute_script("return document.body && document.body.dataset.drawnMs"):
        assert time.time() < end, "the charts were not drawn within a minute"
        time.sleep(0.05)
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


POINTS = """
var gd = document.getElementById(arguments[0]), bars = gd.querySelectorAll('.barlayer .trace'), b = 0;
return gd._fullData.map(function (t) {
  var g = t.type === 'bar' ? bars[b++] : gd.querySelector('.scatterlayer .trace' + t.uid);
  return [t.meta || null, t.name, g ? g.querySelectorAll(t.type === 'bar' ? '.point' : 'path.point').length : -1];
});
"""


def points(driver, chart: str) -> dict:
    """SVG point elements Plotly drew, per trace: {meta (or name): count}."""
    return {meta or name: n for meta, name, n in driver.execute_script(POINTS, chart)}


def hover(driver, chart: str, meta: str, index: int) -> str:
    """Move the mouse onto one drawn point and read Plotly's hover layer."""
    from selenium.webdriver.common.action_chains import ActionChains

    uid = driver.execute_script("return document.getElementById(arguments[0])._fullData"
                                ".find(function (t) { return t.meta === arguments[1]; }).uid".replace(
                                    "arguments[1]", json.dumps(meta)), chart)
    point = driver.find_elements("css selector", f"#{chart} .scatterlayer .trace{uid} path.point")[index]
    ActionChains(driver).move_to_element(point).perform()
    end = time.time() + 5
    while True:
        text = driver.execute_script(f"var h = document.querySelector('#{chart} .hoverlayer');"
                                     "return h ? h.textContent : ''")
        if text or time.time() > end:
            return text
        time.sleep(0.05)


def column(driver, table: str, i: int = 0, visible: bool = True) -> list[str]:
    """The texts of a table's column, top to bottom (the rows the filter left shown, unless ``visible`` is False)."""
    return driver.execute_script(
        "var t = document.getElementById(arguments[0]), i = arguments[1], v = arguments[2];"
        "return Array.from(t.querySelector('.body').children).filter(function (r) { return !v || !r.hidden; })"
        ".map(function (r) { return r.children[i].textContent; });", table, i, visible)


def click_header(driver, table: str, header: str) -> None:
    heads = driver.find_elements("css selector", f"#{table} .head span")
    next(h for h in heads if h.text.split(" ")[0] == header.split(" ")[0]).click()


@browser_test
def test_roofline_page_draws_every_kernel_hovers_and_sorts(browser, tmp_path, capsys):
    times = tmp_path / "times.json"
    times.write_text(json.dumps({"act_mul": 1e-05, "attention": 2e-05}))
    args = EXAMPLE + ["--kernel-times", str(times), "--point", "matmul 4096:137438953472:100663296:0.00275"]
    doc = record(args, capsys)
    page = tmp_path / "roofline.html"
    write(args, page, capsys)
    load(browser, page)

    drawn = [k for k in doc["kernels"] if k["flops"] and k["bytes"]]  # a FLOP/s axis has no place for the rest
    measured = [k for k in drawn if k["measured_s"] is not None]
    got = points(browser, "roofline")
    assert got["kernels-predicted"] == len(drawn) == len(doc["kernels"]) - 2  # embed_tokens, kv_cache_write
    assert got["kernels-measured"] == len(measured) == 2
    assert got["step-predicted"] == got["step-measured"] == 1
    assert got["points"] == len(doc["points"]) == 1
    assert sum(n for meta, n in got.items()) == len(drawn) + len(measured) + 2 + len(doc["points"])

    names = [k["name"] for k in drawn]
    text = hover(browser, "roofline", "kernels-predicted", names.index("attention"))
    attention = next(k for k in drawn if k["name"] == "attention")
    assert "attention" in text and attention["shape"] in text and "bound    fixed" in text.replace("\xa0", " ")
    text = hover(browser, "roofline", "kernels-measured", [k["name"] for k in measured].index("act_mul"))
    assert "act_mul" in text and "measured 10 us" in text.replace("\xa0", " ")

    everything = [k["name"] for k in doc["kernels"]]
    assert column(browser, "kernels") == everything  # execution order
    click_header(browser, "kernels", "kernel")
    assert column(browser, "kernels") == sorted(everything, key=str.lower)
    click_header(browser, "kernels", "kernel")
    assert column(browser, "kernels") == sorted(everything, key=str.lower, reverse=True)
    click_header(browser, "kernels", "FLOPs")  # by the record's number, not the text ("8.39 M" < "16.9 k")
    flops = {k["name"]: k["flops"] for k in doc["kernels"]}
    order = [flops[n] for n in column(browser, "kernels")]
    assert order == sorted(order) and order[0] == 0 and order[-1] == flops["lm_head"]

    box = browser.find_element("id", "kernels-filter")
    box.send_keys("proj")
    assert column(browser, "kernels") == [n for n in column(browser, "kernels", visible=False) if "proj" in n]
    assert len(column(browser, "kernels")) == sum("proj" in n for n in everything) == 7


@browser_test
@pytest.mark.parametrize("contexts", ["512,8192", "256..2560:256"], ids=["a line per context", "ten contexts"])
def test_sweep_page_draws_every_point(browser, tmp_path, capsys, contexts):
    args = ["TinyLlama/TinyLlama-1.1B", "--batch", "1,8,64,512", "--context", contexts]
    doc = record(args, capsys)
    pts = doc["points"]
    page = tmp_path / "sweep.html"
    write(args, page, capsys)
    load(browser, page)
    assert not all(p["fits"] for p in pts)  # batch 512 at the longest context does not fit in 16 GiB
    got = points(browser, "sweep")
    for row in (1, 2, 3):  # step time, tokens/s, memory: one panel each
        if len(doc["workload"]["contexts"]) > 8:  # one trace, its points coloured by the context
            assert got[f"{row}:points"] == len(pts)
        else:
            for s in doc["workload"]["contexts"]:
                assert got[f"{row}:series-{s}"] == sum(p["context"] == s for p in pts) == 4
    assert len(column(browser, "points")) == len(pts)
    first = doc["workload"]["contexts"][0]  # its batch 512, the fourth point of its line (or of the one trace)
    text = hover(browser, "sweep", "3:points" if len(doc["workload"]["contexts"]) > 8 else f"3:series-{first}", 3)
    text = text.replace("\xa0", " ")
    assert "batch 512" in text and f"context {first}" in text and "memory" in text
    click_header(browser, "points", "tokens/s")
    tps = {(p["batch"], p["context"]): p["tokens_per_s"] for p in pts}
    order = [tps[int(b), int(c)] for b, c in zip(column(browser, "points", 0), column(browser, "points", 1))]
    assert order == sorted(order)


@browser_test
def test_tp_comparison_page(browser, tmp_path, capsys):
    args = ["meta-llama/Llama-2-70b-hf", "--hw", "H100", "--tp", "1,2,4,8", "--batch", "64", "--context", "1000",
            "--impl", "cuda-graph"]
    doc = record(args, capsys)
    page = tmp_path / "tp.html"
    write(args, page, capsys)
    load(browser, page)
    n = len(doc["tp_points"])
    assert points(browser, "parallel") == {"step": n, "communication": n, "per-gpu": n}
    assert column(browser, "sizes") == ["1", "2", "4", "8"]
    click_header(browser, "sizes", "tokens/s")
    assert column(browser, "sizes") == [str(p["tp"]) for p in sorted(doc["tp_points"],
                                                                       key=lambda p: p["tokens_per_s"])]


@browser_test
def test_profile_page_places_the_measured_kernels(browser, tmp_path, capsys):
    """roofcalc profile --html: the single step's page, each kernel's measured time a filled point, and the
    profile's lines (measured against predicted, its warnings) under the step. A tiny random Llama on the CPU
    and a hand-written CPU profile (no measuring)."""
    pytest.importorskip("torch")
    cfg, hw, page = tmp_path / "config.json", tmp_path / "hw.json", tmp_path / "profile.html"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
                               "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512,
                               "vocab_size": 1000, "max_position_embeddings": 512}))
    hw.write_text(json.dumps({"name": "test CPU (measured)", "bandwidth_bytes_per_s": 2e10, "nominal": "EPYC-9654",
                              "peak_flop_per_s": {"fp32": 2e11}, "launch_overhead_s": 5e-6, "kind": "cpu"}))
    code, out, err = run(["profile", str(cfg), "--hw-file", str(hw), "--context", "32", "--steps", "2", "-q",
                          "--format", "json", "--html", str(page)], capsys)
    assert code == 0 and err == "", err
    doc = json.loads(out)  # the same run's record
    assert doc["profile"]["unmatched"] == []
    load(browser, page)
    drawn = [k for k in doc["kernels"] if k["flops"] and k["bytes"]]
    measured = [k for k in drawn if k["measured_s"] is not None]
    got = points(browser, "roofline")
    assert got["kernels-measured"] == len(measured) == len(drawn) and got["kernels-predicted"] == len(drawn)
    assert got["step-measured"] == got["step-predicted"] == 1
    footer = browser.find_element("css selector", "pre.footer").text
    assert "unmatched none: every kernel got a measured time" in footer
    assert all(w in footer for w in doc["profile"]["trust"]["warnings"])  # each warning, as the terminal has it
    # a hovered point's tooltip is its kernel's (points that coincide show one of them): its measured time
    text = hover(browser, "roofline", "kernels-measured", [k["name"] for k in measured].index("lm_head"))
    text = text.replace("\xa0", " ")
    shown = next(k for k in measured if text.startswith(k["name"] + " "))
    assert f"measured {shown['measured_s'] * 1e6:.3g} us" in text


def test_a_profile_that_is_its_own_nominal_is_one_roof_on_the_page(tmp_path, capsys):
    """The page's figure, as the plot: a CPU profile naming no datasheet draws its measured roof and ridge alone, and
    its title names no nominal."""
    pytest.importorskip("plotly")
    from own_roof import own_nominal_roofline
    from roofcalc.page import roofline_figure

    names = [t.name or "" for t in roofline_figure(own_nominal_roofline(tmp_path)).data]
    assert any(n.startswith("measured roof") for n in names) and not any(n.startswith("nominal") for n in names)
    assert "measured ridge" in names and "nominal ridge" not in names


def test_the_pages_flag_column_sorts_as_the_table_reads_it(tmp_path, capsys):
    """The flag cell holds the 3x rule's words (1), nothing (0), or "under 0.9x its floor" (-1): the page sorts the
    column by that, so a kernel faster than its floor does not sort among the blank cells. TinyLlama on the T4:
    q_proj reads 8.4 MB, 26.2 us at 320 GB/s; 1 us is under it, 1 s far above 3x it."""
    pytest.importorskip("plotly")
    times = tmp_path / "t.csv"
    times.write_text("name,us\nq_proj,1\no_proj,1000000\n")
    page = tmp_path / "p.html"
    assert main(["TinyLlama/TinyLlama-1.1B", "--kernel-times", str(times), "--html", str(page)]) == 0
    cells = re.findall(r'data-v="(-?[0-9.e+-]+)"[^>]*>(under 0\.9x its floor|above 3x its floor)<', page.read_text())
    assert sorted(cells) == [("-1", "under 0.9x its floor"), ("1", "above 3x its floor")], cells
