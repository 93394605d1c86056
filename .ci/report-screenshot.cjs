// Opens a Snakemake report in headless Chromium, clicks through to a dataset's statistics page and
// saves a screenshot: the check that `snakemake --report` renders what tokenmill puts in it.
//
//   apt-get install chromium && npm install --prefix /tmp/pw playwright-core@1
//   NODE_PATH=/tmp/pw/node_modules node .ci/report-screenshot.cjs report.html report.png [DATASET]
const { chromium } = require("playwright-core");
const path = require("node:path");

(async () => {
  const [report, screenshot, dataset = "demo"] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto("file://" + path.resolve(report));
  await page.waitForTimeout(1000);  // the report is a single-page app: let it render
  const datasets = page.locator("a", { hasText: "Datasets" });
  if ((await datasets.count()) === 0) {  // with one category the menu shows "Results" only
    await page.locator("a", { hasText: "Results" }).first().click();
  }
  await datasets.first().click();
  const row = page.locator("tr").filter({ has: page.getByText(dataset, { exact: true }) }).first();
  await row.locator("a").first().click();  // the row's "show" icon opens the page in the report
  await page.waitForTimeout(1500);
  await page.screenshot({ path: screenshot });
  await browser.close();
})();
