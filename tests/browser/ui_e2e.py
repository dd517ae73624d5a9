#!/usr/bin/env python3
"""The web UI in a real browser (headless Chromium from Debian, driven by Selenium).

A fresh store gets one real `optimize` run at ci scale; `maxkernel serve` serves it. The admin
logs in through the form, finds the run and its candidates, adds an approver and makes their
token in the admin page; the approver logs in with it and is refused the admin API. The audit
log then holds those changes and verifies.

Usage: ui_e2e.py MAXKERNEL_BINARY SOURCE_DIR [--screenshots DIR]
Exit 0 when every check passed; 1 with the failing check otherwise.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:
    sys.exit("ui_e2e: python3-selenium is missing (scripts/setup.sh installs it)")


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def start_server(binary, db, log_path):
    log = open(log_path, "w")
    proc = subprocess.Popen([binary, "serve", "--db", db, "--listen", "127.0.0.1:0",
                             "--insecure-cookies"], stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline:
        with open(log_path) as f:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", f.read())
        if m:
            return proc, int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    with open(log_path) as f:
        raise AssertionError("serve did not start: " + f.read())


def browser():
    for tool in ("chromium", "chromedriver"):
        check(shutil.which(tool), tool + " is missing (scripts/setup.sh installs it)")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def log_in(driver, wait, base, name, token):
    driver.get(base + "/")
    wait.until(ec.presence_of_element_located((By.ID, "login")))
    driver.find_element(By.NAME, "name").send_keys(name)
    driver.find_element(By.NAME, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#login button").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "who"), name))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("source_dir")
    parser.add_argument("--screenshots", default="")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="mk_ui_e2e_")
    db = os.path.join(work, "db")
    server = None
    driver = None
    try:
        task = os.path.join(args.source_dir, "bench", "jaxbench", "12p", "ci")
        run = subprocess.run([args.binary, "optimize", task, "--max-iterations", "2",
                              "--xla-rounds", "0", "--no-probe", "--min-time", "0.05", "-q",
                              "--db", db], capture_output=True, text=True, timeout=600)
        check(run.returncode == 0, "optimize failed: " + run.stderr)
        init = subprocess.run([args.binary, "serve", "--db", db, "--init-admin", "root"],
                              capture_output=True, text=True, timeout=60)
        check(init.returncode == 0, "init-admin failed: " + init.stderr)
        admin_token = init.stdout.strip()
        server, port = start_server(args.binary, db, os.path.join(work, "serve.err"))
        base = "http://127.0.0.1:%d" % port
        driver = browser()
        wait = WebDriverWait(driver, 20)

        def shot(name):
            if args.screenshots:
                os.makedirs(args.screenshots, exist_ok=True)
                driver.save_screenshot(os.path.join(args.screenshots, name + ".png"))

        driver.get(base + "/")
        wait.until(ec.presence_of_element_located((By.ID, "login")))
        shot("login")
        # A wrong token is refused on the form.
        driver.find_element(By.NAME, "name").send_keys("root")
        driver.find_element(By.NAME, "token").send_keys("mkt_000000000000_wrong")
        driver.find_element(By.CSS_SELECTOR, "#login button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "login-error"), "wrong name or token"))

        log_in(driver, wait, base, "root", admin_token)
        wait.until(ec.presence_of_element_located((By.ID, "runs")))
        runs_text = driver.find_element(By.ID, "runs").text
        check("12p" in runs_text and "succeeded" in runs_text, "runs page lacks the run: " + runs_text)
        shot("runs")
        driver.find_element(By.CSS_SELECTOR, "#runs a").click()
        wait.until(ec.presence_of_element_located((By.ID, "candidates")))
        rows = driver.find_elements(By.CSS_SELECTOR, "#candidates tr")
        check(len(rows) >= 2, "run page shows no candidate")
        check("correct" in driver.find_element(By.ID, "candidates").text, "no correct candidate shown")
        shot("run")

        driver.get(base + "/#/admin")
        wait.until(ec.presence_of_element_located((By.ID, "new-user")))
        form = driver.find_element(By.ID, "new-user")
        form.find_element(By.NAME, "name").send_keys("ann")
        Select(form.find_element(By.NAME, "role")).select_by_value("approver")
        form.find_element(By.CSS_SELECTOR, "button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "users"), "ann"))
        token_form = driver.find_element(By.ID, "new-token")
        Select(token_form.find_element(By.NAME, "user")).select_by_value("ann")
        token_form.find_element(By.NAME, "label").send_keys("browser test")
        token_form.find_element(By.CSS_SELECTOR, "button").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#minted .secret")))
        ann_token = driver.find_element(By.CSS_SELECTOR, "#minted .secret").text.strip()
        check(ann_token.startswith("mkt_"), "no token shown: " + ann_token)
        driver.refresh()
        wait.until(ec.text_to_be_present_in_element((By.ID, "audit"), "token.created"))
        check("user:ann" in driver.find_element(By.ID, "audit").text, "audit lacks user:ann")
        shot("admin")

        driver.find_element(By.ID, "logout").click()
        wait.until(ec.presence_of_element_located((By.ID, "login")))
        log_in(driver, wait, base, "ann", ann_token)
        check(not driver.find_element(By.ID, "nav-admin").is_displayed(), "approver sees Admin")
        driver.get(base + "/#/admin")
        wait.until(ec.text_to_be_present_in_element((By.ID, "main"), "may not admin"))

        driver.quit()
        driver = None
        server.send_signal(signal.SIGTERM)
        check(server.wait(timeout=30) == 0, "serve did not stop cleanly on SIGTERM")
        server = None
        verify = subprocess.run([args.binary, "audit", "verify", "--db", db, "--json"],
                                capture_output=True, text=True, timeout=60)
        check(verify.returncode == 0 and '"ok":true' in verify.stdout,
              "audit verify: " + verify.stdout + verify.stderr)
        export = subprocess.run([args.binary, "audit", "export", "--db", db],
                                capture_output=True, text=True, timeout=60)
        for action in ("login.failed", "login.succeeded", "user.created", "token.created", "logout"):
            check('"action":"%s"' % action in export.stdout, "audit lacks " + action)
        print("ui_e2e: 1 passed, 0 failed")
        return 0
    except AssertionError as e:
        print("ui_e2e: FAILED: %s" % e)
        print("ui_e2e: 0 passed, 1 failed")
        return 1
    finally:
        if driver is not None:
            driver.quit()
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
