"""The HTML page (--html) of a 1,000-point sweep: its size, and how long it takes to open.

    python benchmarks/page.py [--runs 5] [--screenshot docs/page-tinyllama-t4.png]

Writes TinyLlama's decode sweep over 10 batches x 100 contexts (1,000 points) with `roofcalc ... --html`,
as a user would, and opens it `--runs` times, each in a fresh headless Chromium (a cold browser, as a
person opening the file meets it): the open time is from navigation start to every chart drawn (the
page's own mark, `document.body.dataset.drawnMs`, set when every Plotly.newPlot has resolved). Beside it,
the renderer's main-thread CPU time for the same span (Chrome's ThreadTime metric), which a loaded
machine distorts less than the wall clock; the same page reopened in a browser that has opened it before; and
the load average. Targets: under 2 MB, under 2 s.

`--screenshot PATH` instead writes a screenshot of the worked example's page (TinyLlama on a T4 with
the README's measured roof and step) for the README.

Needs Debian's chromium and chromium-driver, and the [html] and [test] extras (plotly, selenium).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from roofcalc.cli import main  # noqa: E402

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WIDTH = 1560  # the screenshot: the page at its widest (1,500 px), the kernel table whole
SWEEP = ["TinyLlama/TinyLlama-1.1B", "--batch", "1..512", "--context", "128..12800:128"]  # 10 x 100 points
EXAMPLE = ["TinyLlama/TinyLlama-1.1B", "--measured-bw", "270GB/s", "--measured-flops", "50TFLOP/s", "--tpot", "15ms"]


def browser(width: int = 1400, height: int = 1000):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--hide-scrollbars", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def write_page(args: list[str], path: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(args + ["--html", path])
    if code:
        raise SystemExit(f"roofcalc exited {code}")


def drawn(driver, timeout: float = 60) -> float:
    """Milliseconds from navigation start to every chart drawn, the page's own mark."""
    end = time.time() + timeout
    while time.time() < end:
        ms = driver.execute_script("return document.body && document.body.dataset.drawnMs")
        if ms:
            return float(ms)
        time.sleep(0.02)
    raise SystemExit("the charts were not drawn within a minute")


def open_once(url: str) -> tuple[float, float]:
    """(open ms, main-thread CPU ms) in a fresh browser."""
    driver = browser()
    try:
        driver.execute_cdp_cmd("Performance.enable", {})
        driver.get(url)
        ms = drawn(driver)
        metrics = {m["name"]: m["value"] for m in driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]}
        return ms, 1e3 * metrics["ThreadTime"]
    finally:
        driver.quit()


def screenshot(path: str) -> None:
    """The worked example's page, whole."""
    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "page.html")
        write_page(EXAMPLE, page)
        driver = browser(WIDTH, 1000)
        try:
            driver.get(Path(page).as_uri())
            drawn(driver)
            bottom = driver.execute_script("return document.documentElement.scrollHeight")
            # a viewport as tall as the page, every table row drawn (the page lays out a row as it scrolls into
            # view: content-visibility)
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": WIDTH, "height": bottom, "deviceScaleFactor": 1, "mobile": False})
            driver.execute_script("var s = document.createElement('style'); s.textContent = "
                                  "'.grid .body>div{content-visibility:visible}'; document.head.appendChild(s)")
            time.sleep(0.5)  # Plotly redraws at the new size (responsive)
            bottom = driver.execute_script("return document.documentElement.scrollHeight")
            shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": WIDTH, "height": bottom, "scale": 1}})
            Path(path).write_bytes(base64.b64decode(shot["data"]))
        finally:
            driver.quit()
    print(f"screenshot {path} ({WIDTH} x {bottom} px)")


def run(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "sweep.html")
        t = time.perf_counter()
        write_page(SWEEP, page)
        build = time.perf_counter() - t
        size = os.path.getsize(page)
        print(f"page      roofcalc {' '.join(SWEEP)} --html: 1,000 points, {size:,} bytes "
              f"({size / 2 ** 20:.2f} MiB; target under 2 MB) written in {build:.2f} s")
        url = Path(page).as_uri()
        opens, cpus = [], []
        for _ in range(runs):
            ms, cpu = open_once(url)
            opens.append(ms)
            cpus.append(cpu)
        warm = []
        driver = browser()  # the same browser opening it again: plotly.js compiled once
        try:
            for _ in range(runs + 1):
                driver.get(url)
                warm.append(drawn(driver))
        finally:
            driver.quit()
        warm = warm[1:]
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"open      navigation start to all charts drawn, {runs} fresh headless Chromium runs: median "
              f"{statistics.median(opens):,.0f} ms (min {min(opens):,.0f}, max {max(opens):,.0f}; target under 2 s)")
        print(f"cpu       renderer main thread in those runs: median {statistics.median(cpus):,.0f} ms "
              f"(min {min(cpus):,.0f}, max {max(cpus):,.0f})")
        print(f"reopened  in a browser that has opened it before: median {statistics.median(warm):,.0f} ms "
              f"(min {min(warm):,.0f}, max {max(warm):,.0f})")
        print(f"machine   {os.cpu_count()} CPUs, load average {load:.2f} (a loaded machine stretches the open time)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--screenshot", metavar="PNG")
    a = p.parse_args()
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        raise SystemExit("needs /usr/bin/chromium and /usr/bin/chromedriver: apt-get install chromium chromium-driver")
    if a.screenshot:
        screenshot(a.screenshot)
    else:
        run(a.runs)
