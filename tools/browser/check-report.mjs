// check-report.mjs - opens one of costsim's HTML reports in Debian's
// chromium, headless, and checks what a reader would see: the page loads
// with no console message of error or warning level and no request but
// the file itself, it holds no script, every book named has its row and
// its chart elements drawn at a non-zero size, and a text given appears
// as text (an escaped hostile name). Prints "N passed, M failed" like the
// shell tests; exits 1 on any failure.
//
// node check-report.mjs REPORT.html [--priced ID,...] [--unpriced ID,...]
//     [--tornado ID,...] [--text TEXT]... [--screenshot PNG]
// The browser is $CHROMIUM, else /usr/bin/chromium.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import puppeteer from "puppeteer-core";

const args = process.argv.slice(2);
const opts = { priced: [], unpriced: [], tornado: [], text: [] };
let report = null;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (["--priced", "--unpriced", "--tornado"].includes(a))
    opts[a.slice(2)] = args[++i].split(",").filter(Boolean);
  else if (a === "--text") opts.text.push(args[++i]);
  else if (a === "--screenshot") opts.screenshot = args[++i];
  else if (!report && !a.startsWith("--")) report = a;
  else {
    console.error(`check-report: unknown argument '${a}'`);
    process.exit(2);
  }
}
if (!report) {
  console.error("usage: node check-report.mjs REPORT.html [options]");
  process.exit(2);
}
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
if (!existsSync(chromium)) {
  console.error(`check-report: no browser at ${chromium}`);
  process.exit(2);
}

let checks = 0;
let fails = 0;
function check(ok, what) {
  checks++;
  if (!ok) {
    fails++;
    console.error(`FAIL: ${what}`);
  }
}

const url = pathToFileURL(resolve(report)).href;
const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  // As root (CI) chromium refuses to start sandboxed.
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const messages = [];
  const requests = [];
  page.on("console", (m) => {
    if (["error", "warn", "assert"].includes(m.type()))
      messages.push(`${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => messages.push(`page error: ${e.message}`));
  page.on("request", (r) => requests.push(r.url()));
  page.on("requestfailed", (r) =>
    messages.push(`request failed: ${r.url()}`),
  );
  const response = await page.goto(url, { waitUntil: "networkidle0" });
  check(response && response.ok(), `${url} loads`);
  check(messages.length === 0, `no console error: ${messages.join("; ")}`);
  const others = requests.filter((r) => r !== url);
  check(others.length === 0, `no request but the file: ${others.join(", ")}`);

  const seen = await page.evaluate((o) => {
    const size = (el) => {
      if (!el) return null;
      const r = el.getBoundingClientRect();
      return { w: r.width, h: r.height };
    };
    const q = (sel, id) =>
      document.querySelector(`${sel}[data-book="${CSS.escape(id)}"]`);
    const out = { books: {}, tornado: {} };
    for (const id of [...o.priced, ...o.unpriced])
      out.books[id] = {
        row: !!q("tr", id),
        box: size(q(".chart.dist ", id)),
        hist: size(q(".chart.hist ", id)),
        histBars: q(".chart.hist ", id)?.querySelectorAll("rect").length ?? 0,
        stack: size(q(".chart.stack ", id)),
        stackParts: q(".chart.stack ", id)?.querySelectorAll("rect").length ?? 0,
      };
    for (const id of o.tornado) {
      const g = q(".chart.tornado ", id);
      out.tornado[id] = {
        size: size(g),
        bars: g ? g.querySelectorAll("rect.low, rect.high").length : 0,
        sized: g
          ? [...g.querySelectorAll("rect")].every(
              (r) => r.getBoundingClientRect().width > 0,
            )
          : false,
      };
    }
    const all = [...document.querySelectorAll("*")];
    out.scripts = document.scripts.length;
    out.handlers = all.filter((el) =>
      [...el.attributes].some((a) => a.name.startsWith("on")),
    ).length;
    out.links = [...document.querySelectorAll("a[href]")]
      .map((a) => a.href)
      .filter((h) => !/^https?:/.test(h));
    out.text = document.body.innerText;
    out.svgs = [...document.querySelectorAll("svg")].map((s) => ({
      label: !!s.querySelector("title") && s.getAttribute("role") === "img",
      w: s.getBoundingClientRect().width,
    }));
    out.overflow = document.documentElement.scrollWidth - window.innerWidth;
    return out;
  }, opts);

  check(seen.scripts === 0, `no script element (${seen.scripts})`);
  check(seen.handlers === 0, `no on* attribute (${seen.handlers})`);
  check(seen.links.length === 0, `only http(s) links: ${seen.links}`);
  check(seen.overflow <= 0, `no sideways scrolling (${seen.overflow} px)`);
  check(seen.svgs.length > 0, "charts are drawn");
  check(
    seen.svgs.every((s) => s.label && s.w > 0),
    "every chart has a title, the img role and a width",
  );
  const big = (s) => s && s.w > 0 && s.h > 0;
  for (const id of opts.priced) {
    const b = seen.books[id];
    check(b.row, `${id}: a row in the table`);
    check(big(b.box), `${id}: its box plot row has a size`);
    check(big(b.hist) && b.histBars > 0, `${id}: its histogram has bars`);
    check(big(b.stack) && b.stackParts > 0, `${id}: its stacked bar`);
  }
  for (const id of opts.unpriced) {
    const b = seen.books[id];
    check(b.row, `${id}: a row in the table`);
    check(!b.box && !b.stack, `${id}: no chart for an unpriced book`);
  }
  for (const id of opts.tornado) {
    const t = seen.tornado[id];
    check(big(t.size) && t.bars > 0 && t.sized, `${id}: its tornado bars`);
  }
  for (const t of opts.text)
    check(seen.text.includes(t), `the page shows as text: ${t}`);

  if (opts.screenshot)
    await page.screenshot({ path: opts.screenshot, fullPage: true });
} finally {
  await browser.close();
}
console.log(`${checks - fails} passed, ${fails} failed`);
process.exit(fails ? 1 : 0);
