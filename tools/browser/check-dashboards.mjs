// check-dashboards.mjs - the finance dashboards served by meterd, in
// Debian's chromium, headless, as a person uses them (tests/dashboards.sh
// sets up the data and runs it):
//
// - signs in through the form with a finance key (typed, then Enter),
//   and lands on /overview;
// - visits the overview (and the previous period by its link), the
//   accounts, one account, usage and invoices (three of them again in
//   the dark color scheme); on each: a full-page screenshot; the
//   Content-Security-Policy header and no <script>;
//   every chart an svg[role=img] with a <title> and <desc>, a size, and
//   as many bars as its data-points (the overview's revenue by day and
//   the usage chart may not be empty); every table.data with column
//   headers and row headers; every cell that has data-key equal to the
//   member of that key in the JSON route's row (the same query); every
//   table's CSV equal to the table; no serious or critical violation
//   reported by axe-core;
// - changes a filter, sorts by two headers, changes the period through
//   the form, filters invoices by status; downloads a table's CSV by
//   clicking its link;
// - walks the header with the keyboard (skip link, navigation, sign-out,
//   the form), every focused element visible with an outline, and
//   follows a navigation link with Enter;
// - follows every link of the pages (each answers 200);
// - signs out (then /overview sends to the sign-in page), signs in with
//   an account key (clicking the button): it lands on its account, the
//   overview is 403 and another account's page 404, each a page that
//   says so (as is a 400 for a wrong period).
//
// Throughout, a console message of error or warning level, an uncaught
// page error, a failed request, an HTTP error that was not the point of
// the step, or a request to another origin fails the step it happened
// in. Prints "N passed, M failed" like the shell tests; exits 1 on any
// failure, 2 on a usage error.
//
// node check-dashboards.mjs --url URL --key FINANCE_KEY
//     --account-key ACCOUNT_KEY --account ID --shots DIR
// The browser is $CHROMIUM, else /usr/bin/chromium.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import puppeteer from "puppeteer-core";

const require = createRequire(import.meta.url);

const opts = {};
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const names = ["--url", "--key", "--account-key", "--account", "--shots"];
  if (names.includes(a) && i + 1 < args.length) opts[a.slice(2)] = args[++i];
  else {
    console.error(`check-dashboards: unknown argument '${a}'`);
    process.exit(2);
  }
}
for (const k of ["url", "key", "account-key", "account", "shots"])
  if (!opts[k]) {
    console.error(
      "usage: node check-dashboards.mjs --url URL --key FINANCE_KEY " +
        "--account-key ACCOUNT_KEY --account ID --shots DIR",
    );
    process.exit(2);
  }
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
if (!existsSync(chromium)) {
  console.error(`check-dashboards: no browser at ${chromium}`);
  process.exit(2);
}
const origin = new URL(opts.url).origin;
const at = (path) => new URL(path, origin).href;
mkdirSync(opts.shots, { recursive: true });
// axe-core's own build, read here and evaluated in the page (see axe()).
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

let checks = 0;
let fails = 0;
function check(ok, what) {
  checks++;
  if (!ok) {
    fails++;
    console.error(`FAIL: ${what}`);
  }
  return ok;
}

// ---- what the browser did -------------------------------------------------

// Problems seen since the step began; expected: the URLs whose HTTP
// error is the point of the step (a 403 to see, say), and the download
// whose navigation the browser aborts to save the file instead.
let problems = [];
const expected = new Set();

function watch(page) {
  page.on("console", (m) => {
    if (!["error", "warn", "warning", "assert"].includes(m.type())) return;
    const url = m.location()?.url;
    if (url && expected.has(url) && /status of \d+/.test(m.text())) return;
    problems.push(`console ${m.type()}: ${m.text()} (${url || "no url"})`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.protocol === "data:") return;
    if (u.origin !== origin)
      problems.push(`a request to another origin: ${r.url()}`);
  });
  page.on("requestfailed", (r) => {
    if (expected.has(r.url())) return;
    problems.push(
      `request failed: ${r.url()} (${r.failure()?.errorText ?? "?"})`,
    );
  });
  page.on("response", (r) => {
    if (r.status() >= 400 && !expected.has(r.url()))
      problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
}

// Ends a step: whatever went wrong in it fails it, by name.
function settle(step) {
  check(problems.length === 0, `${step}: ${problems.join("; ")}`);
  problems = [];
  expected.clear();
}

// ---- requests from node, as the browser's session -------------------------

// The pages' Content-Security-Policy leaves fetch() no origin to connect
// to (connect-src falls back to default-src 'none'), and the test must
// not loosen it to read the JSON behind a page. So the JSON routes and
// CSV links are fetched here with the browser's own session cookie,
// which authenticates a GET as it does the browser's.
let page;
async function session() {
  const jar = await page.browserContext().cookies();
  const c = jar.find((k) => k.name === "meter_session");
  return c ? `meter_session=${c.value}` : "";
}
async function get(path) {
  const r = await fetch(at(path), {
    headers: { Cookie: await session() },
    redirect: "manual",
  });
  return {
    status: r.status,
    type: r.headers.get("content-type") || "",
    disposition: r.headers.get("content-disposition") || "",
    location: r.headers.get("location") || "",
    body: await r.text(),
  };
}
async function getJSON(path) {
  const r = await get(path);
  if (!check(r.status === 200, `GET ${path}: HTTP ${r.status} ${r.body.slice(0, 200)}`))
    return null;
  return JSON.parse(r.body);
}

// ---- what a page shows ----------------------------------------------------

// A JSON value as the page writes it (meterd_cell in meter/meterd/view.c):
// strings as they are, integers in decimal, booleans yes/no, else empty.
function shown(v) {
  if (typeof v === "string") return v;
  if (typeof v === "number") return String(v);
  if (v === true) return "yes";
  if (v === false) return "no";
  return "";
}

// Whether a cell shows value: its text, or a link named by the format
// it leads to (the invoices' PDF, HTML, CSV, JSON links to the ref).
function showsValue(cell, value) {
  if (cell.text === value) return true;
  if (!cell.link) return false;
  const last = decodeURIComponent(cell.link.href.split("?")[0].split("/").pop());
  return last === `${value}.${cell.text.toLowerCase()}`;
}

// The JSON behind each kind of page, with the page's own query: the rows
// of each of its tables by table id, and other values by data-key.
async function behind(kind, url) {
  const u = new URL(url);
  const q = u.search;
  if (kind === "overview") {
    const d = await getJSON(`/v1/reports/overview${q}`);
    return (
      d && {
        tables: {
          revenue: d.revenue,
          revenue_by_day: d.revenue_by_day.filter((r) => r.period === "current"),
          revenue_by_book: d.revenue_by_book,
          revenue_by_model: d.revenue_by_model,
          top_accounts: d.top_accounts,
          autopause_credit: d.autopause_credit,
          idle: [d.idle],
          ingested_per_minute: d.ingested_per_minute,
        },
        // The key figures above the tables.
        values: Object.fromEntries([
          ...d.revenue.map((r) => [`revenue.${r.currency}.period_to_date`, r.period_to_date]),
          ["idle.idle_share", shown(d.idle.idle_share)],
        ]),
      }
    );
  }
  if (kind === "accounts") {
    const d = await getJSON(`/v1/reports/accounts${q}`);
    return d && { tables: { accounts: d.items }, values: {}, doc: d };
  }
  if (kind === "account") {
    const d = await getJSON(`/v1/reports${u.pathname}${q}`);
    return (
      d && {
        tables: {
          usage_by_day: d.usage_by_day,
          revenue_by_day: d.revenue_by_day,
          price_books: d.price_books,
          invoices: d.invoices,
        },
        values: d.estimate ? { estimate: d.estimate.total } : {},
      }
    );
  }
  if (kind === "usage") {
    const d = await getJSON(`/v1/reports/usage${q}`);
    return d && { tables: { usage: d.items }, values: {} };
  }
  if (kind === "invoices") {
    const d = await getJSON(`/v1/reports/invoices${q}`);
    return d && { tables: { invoices: d.items }, values: {} };
  }
  return null;
}

// Everything the checks need from the page's DOM, in one pass.
function look() {
  const box = (el) => {
    const r = el.getBoundingClientRect();
    return { w: r.width, h: r.height };
  };
  const cell = (c) => {
    const a = c.querySelector("a");
    return {
      tag: c.tagName.toLowerCase(),
      scope: c.getAttribute("scope"),
      key: c.getAttribute("data-key"),
      text: c.textContent,
      link: a && { href: a.getAttribute("href"), text: a.textContent },
    };
  };
  return {
    url: location.href,
    h1: document.querySelector("h1")?.textContent ?? "",
    scripts: document.querySelectorAll("script").length,
    handlers: [...document.querySelectorAll("*")].filter((el) =>
      [...el.attributes].some((a) => a.name.startsWith("on")),
    ).length,
    inlineStyles: document.querySelectorAll("[style], style").length,
    links: [...document.querySelectorAll("a[href]")].map((a) => a.getAttribute("href")),
    values: [...document.querySelectorAll("[data-key]")]
      .filter((el) => !el.closest("table"))
      .map((el) => ({ key: el.getAttribute("data-key"), text: el.textContent })),
    charts: [...document.querySelectorAll("svg")].map((s) => {
      const ids = (s.getAttribute("aria-labelledby") || "").split(/\s+/);
      return {
        id: s.getAttribute("data-chart"),
        role: s.getAttribute("role"),
        hidden: s.getAttribute("aria-hidden") === "true",
        title: s.querySelector(":scope > title")?.textContent ?? "",
        desc: s.querySelector(":scope > desc")?.textContent ?? "",
        labelled:
          ids.length === 2 &&
          ids.every((id) => document.getElementById(id)?.closest("svg") === s),
        points: Number(s.getAttribute("data-points") ?? -1),
        ...box(s),
        bars: [...s.querySelectorAll("g.bars rect")].map((r) => ({
          ...box(r),
          title: r.querySelector("title")?.textContent ?? "",
          fill: getComputedStyle(r).fill,
        })),
      };
    }),
    tables: [...document.querySelectorAll("table.data")].map((t) => ({
      id: t.getAttribute("data-table"),
      caption: t.caption?.textContent ?? "",
      heads: [...t.querySelectorAll("thead th")].map(cell),
      headRows: t.tHead ? t.tHead.rows.length : 0,
      rows: [...t.tBodies[0].rows]
        .filter((r) => r.querySelector("[data-key]"))
        .map((r) => [...r.cells].map(cell)),
      csv:
        t.closest(".table-wrap")?.nextElementSibling?.querySelector("a[download]")
          ?.getAttribute("href") ?? null,
    })),
  };
}

// A CSV (RFC 4180) into rows of fields; a field that a spreadsheet would
// run as a formula carries a leading quote mark, taken off here.
function parseCSV(text) {
  const rows = [];
  let row = [];
  let f = "";
  let quoted = false;
  let wasQuoted = false;
  const end = () => {
    if (wasQuoted && f.startsWith("'") && /^'[=+@\t\r-]/.test(f)) f = f.slice(1);
    row.push(f);
    f = "";
    wasQuoted = false;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        f += '"';
        i++;
      } else if (c === '"') quoted = false;
      else f += c;
    } else if (c === '"') {
      quoted = true;
      wasQuoted = true;
    } else if (c === ",") end();
    else if (c === "\r" && text[i + 1] === "\n") {
      end();
      rows.push(row);
      row = [];
      i++;
    } else f += c;
  }
  if (f !== "" || row.length) {
    end();
    rows.push(row);
  }
  return rows;
}

// A header's label without the sort arrow the page adds.
const label = (th) => th.text.replace(/ [▲▼]$/, "");

let shot = 0;
const linksSeen = new Set();

// The checks every page gets. kind names its JSON (behind()); charts the
// ids of the charts that must have points.
async function examine(step, response, kind, { charts = [] } = {}) {
  const name = `${String(++shot).padStart(2, "0")}-${step.replace(/[^a-z0-9]+/gi, "-")}`;
  await page.screenshot({ path: join(opts.shots, `${name}.png`), fullPage: true });
  const h = response.headers();
  const csp = h["content-security-policy"] || "";
  check(
    /(^|;)\s*default-src 'none'/.test(csp) && !/script-src/.test(csp) &&
      !/unsafe-/.test(csp),
    `${step}: a Content-Security-Policy with no script: '${csp}'`,
  );
  check(h["x-content-type-options"] === "nosniff", `${step}: nosniff`);
  const seen = await page.evaluate(look);
  check(seen.scripts === 0, `${step}: no <script> (${seen.scripts})`);
  check(seen.handlers === 0, `${step}: no on* attribute (${seen.handlers})`);
  check(seen.inlineStyles === 0, `${step}: no inline style (${seen.inlineStyles})`);
  for (const l of seen.links) {
    const u = new URL(l, seen.url);
    check(u.origin === origin, `${step}: a link to another origin: ${l}`);
    if (u.origin === origin) linksSeen.add(u.pathname + u.search);
  }

  // Charts.
  for (const c of seen.charts) {
    const what = `${step}: chart ${c.id}`;
    if (c.hidden) continue;
    check(c.role === "img", `${what}: role img (${c.role})`);
    check(c.title.trim() !== "" && c.desc.trim() !== "", `${what}: a <title> and a <desc>`);
    check(c.labelled, `${what}: aria-labelledby names its title and desc`);
    check(c.w > 0 && c.h > 0, `${what}: a size (${c.w}x${c.h})`);
    check(c.bars.length === c.points, `${what}: ${c.bars.length} bars, data-points ${c.points}`);
    // A bar of zero is flat; any other has a height, and all a width.
    const bad = c.bars.filter((b) => {
      const v = Number((b.title.split(": ").pop() || "").split(" ")[0]);
      return !(b.w > 0) || (v !== 0 && !(b.h > 0));
    });
    check(bad.length === 0, `${what}: bars without a size: ${bad.map((b) => b.title).join(", ")}`);
    if (c.points > 0)
      check(c.bars.some((b) => b.h > 0), `${what}: every bar is flat`);
    // Filled by the stylesheet, not SVG's default black (which the
    // dark scheme's background would swallow).
    const black = c.bars.filter((b) => b.fill === "rgb(0, 0, 0)" || b.fill === "none");
    check(black.length === 0, `${what}: ${black.length} bars with no color of the stylesheet`);
  }
  for (const id of charts) {
    const c = seen.charts.find((x) => x.id === id);
    check(c && c.points > 0, `${step}: chart ${id} has points (an empty chart)`);
  }

  // Tables: headers of both kinds.
  for (const t of seen.tables) {
    const what = `${step}: table ${t.id}`;
    check(t.caption.trim() !== "", `${what}: a caption`);
    check(
      t.headRows === 1 && t.heads.length > 0 && t.heads.every((c) => c.scope === "col"),
      `${what}: header cells th[scope=col] in thead`,
    );
    for (const [i, r] of t.rows.entries()) {
      check(r.length === t.heads.length, `${what} row ${i}: ${r.length} cells for ${t.heads.length} columns`);
      check(r[0]?.tag === "th" && r[0]?.scope === "row", `${what} row ${i}: a row header`);
    }
  }

  // The numbers: every data-key cell against its JSON row.
  const api = kind ? await behind(kind, seen.url) : null;
  if (kind) check(api, `${step}: its JSON`);
  if (api) {
    const ids = seen.tables.map((t) => t.id).sort();
    check(
      JSON.stringify(ids) === JSON.stringify(Object.keys(api.tables).sort()),
      `${step}: tables ${ids} are those of its JSON (${Object.keys(api.tables)})`,
    );
    for (const t of seen.tables) {
      const rows = api.tables[t.id];
      if (!rows) continue;
      check(
        t.rows.length === rows.length,
        `${step}: table ${t.id} has ${t.rows.length} rows, its JSON ${rows.length}`,
      );
      let cells = 0;
      for (const [i, r] of t.rows.entries())
        for (const c of r) {
          if (c.key === null) continue;
          cells++;
          const want = shown(rows[i]?.[c.key]);
          check(
            showsValue(c, want),
            `${step}: table ${t.id} row ${i} ${c.key}: page '${c.text}', JSON '${want}'`,
          );
        }
      if (rows.length)
        check(cells > 0, `${step}: table ${t.id}: no cell carries data-key`);
    }
    for (const v of seen.values) {
      check(
        v.key in api.values && v.text === api.values[v.key],
        `${step}: ${v.key}: page '${v.text}', JSON '${api.values[v.key]}'`,
      );
    }
  }

  // Each table's CSV: its header cells and its rows.
  for (const t of seen.tables) {
    const what = `${step}: CSV of ${t.id}`;
    if (!check(t.csv, `${what}: a link`)) continue;
    const r = await get(new URL(t.csv, seen.url).pathname + new URL(t.csv, seen.url).search);
    check(r.status === 200 && r.type.startsWith("text/csv"), `${what}: HTTP ${r.status} ${r.type}`);
    check(r.disposition.includes(`filename="${t.id}.csv"`), `${what}: named ${t.id}.csv (${r.disposition})`);
    compareCSV(what, t, r.body);
  }

  await axe(step);
  settle(step);
  return seen;
}

function compareCSV(what, t, text) {
  const rows = parseCSV(text);
  check(
    JSON.stringify(rows[0]) === JSON.stringify(t.heads.map(label)),
    `${what}: header ${JSON.stringify(rows[0])}, table ${JSON.stringify(t.heads.map(label))}`,
  );
  check(rows.length - 1 === t.rows.length, `${what}: ${rows.length - 1} rows, table ${t.rows.length}`);
  for (const [i, r] of t.rows.entries()) {
    const fields = rows[i + 1] || [];
    check(fields.length === r.length, `${what} row ${i}: ${fields.length} fields for ${r.length} cells`);
    // A link shown by its text (PDF, ...) is its address in the CSV.
    for (const [k, c] of r.entries())
      check(
        c.link && c.link.text !== fields[k] && c.text === c.link.text
          ? c.link.href === fields[k]
          : showsValue(c, fields[k]),
        `${what} row ${i} column ${label(t.heads[k] || { text: "?" })}: CSV '${fields[k]}', page '${c.text}'`,
      );
  }
}

// axe-core on the page as it is. It is evaluated as source through the
// DevTools protocol, which the page's Content-Security-Policy does not
// govern, rather than added as a <script> element (which that policy
// refuses, and which the page must not hold): the policy stays on for
// everything the page itself loads. Serious and critical violations
// fail; others are printed.
async function axe(step) {
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.slice(0, 6).map((n) => n.target.join(" ")),
    }));
  });
  for (const v of found) {
    const text = `${step}: axe ${v.impact} ${v.id} (${v.help}): ${v.targets.join(", ")}`;
    if (v.impact === "serious" || v.impact === "critical") check(false, text);
    else console.log(`note: ${text}`);
  }
  check(true, `${step}: axe ran`);
}

// Goes to path; the response (after redirects).
async function visit(path, { status = 200 } = {}) {
  if (status !== 200) expected.add(at(path));
  const r = await page.goto(at(path), { waitUntil: "load" });
  check(r && r.status() === status, `GET ${path}: HTTP ${r?.status()}, want ${status}`);
  return r;
}

// Runs act (a click, a key) and waits for the navigation it starts.
async function navigating(act) {
  const [r] = await Promise.all([page.waitForNavigation({ waitUntil: "load" }), act()]);
  return r;
}

const pathOf = () => {
  const u = new URL(page.url());
  return u.pathname;
};
const query = () => new URL(page.url()).searchParams;

// Presses Tab n times from the top of the page; what got focus each time.
async function tabs(n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    await page.keyboard.press("Tab");
    out.push(
      await page.evaluate(() => {
        const el = document.activeElement;
        const r = el.getBoundingClientRect();
        const s = getComputedStyle(el);
        return {
          tag: el.tagName.toLowerCase(),
          id: el.id,
          cls: el.className,
          href: el.getAttribute("href"),
          text: (el.textContent || "").trim(),
          w: r.width,
          h: r.height,
          inView: r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth,
          shown: s.visibility !== "hidden" && s.display !== "none" && Number(s.opacity) > 0,
          outline: s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0,
        };
      }),
    );
  }
  return out;
}
function focusVisible(step, seq) {
  for (const f of seq) {
    const what = `${step}: focus on ${f.tag}${f.id ? "#" + f.id : ""} '${f.text.slice(0, 30)}'`;
    check(f.w > 0 && f.h > 0 && f.inView && f.shown, `${what} is visible (${f.w}x${f.h})`);
    check(f.outline, `${what} has a focus outline`);
  }
}

// Signs in with key through the form, focused with Tab and submitted
// with Enter (submit: "enter") or a click on the button ("click").
// The form is the one the page shows, else /sign-in's.
async function signIn(step, key, submit) {
  if (pathOf() !== "/sign-in") await examine(`${step}: the form`, await visit("/sign-in"), null);
  else await page.goto(page.url(), { waitUntil: "load" }); // focus from the top
  const seq = [];
  for (let i = 0; i < 6 && seq.at(-1)?.id !== "key"; i++) seq.push(...(await tabs(1)));
  check(seq[0]?.cls === "skip", `${step}: the first Tab reaches the skip link (${seq[0]?.text})`);
  check(seq.at(-1)?.id === "key", `${step}: Tab reaches the key's field`);
  focusVisible(step, seq);
  await page.keyboard.type(key);
  const resp =
    submit === "enter"
      ? await navigating(() => page.keyboard.press("Enter"))
      : await navigating(() => page.click("form[action='/sign-in'] button[type=submit]"));
  check(resp && resp.status() === 200, `${step}: signed in, HTTP ${resp?.status()}`);
  settle(step);
  return resp;
}

async function signOut(step) {
  const r = await navigating(() => page.click("form.sign-out button"));
  check(pathOf() === "/sign-in", `${step}: sign-out lands on /sign-in (${page.url()})`);
  check((await session()) === "", `${step}: the session cookie is gone`);
  settle(step);
  return r;
}

// ---- the run --------------------------------------------------------------

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  // As root (CI) chromium refuses to start sandboxed.
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--lang=en-US"],
});
try {
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  watch(page);

  // Without a session a page sends to the sign-in form, and back after.
  let r = await visit("/overview");
  check(
    pathOf() === "/sign-in" && query().get("next") === "/overview",
    `no session: /overview sends to the sign-in page with the way back (${page.url()})`,
  );
  await examine("sign-in", r, null);
  r = await signIn("sign-in with the finance key", opts.key, "enter");
  check(pathOf() === "/overview", `the finance key lands on /overview (${page.url()})`);

  // The overview, this period and the previous by its link.
  const overview = await examine("overview", r, "overview", {
    charts: ["chart-days", "chart-ingest"],
  });
  check(/^Overview of \d{4}-\d{2}$/.test(overview.h1), `overview's heading: ${overview.h1}`);
  r = await navigating(() => page.click("p.periods a[rel=prev]"));
  const prev = query().get("period");
  check(/^\d{4}-\d{2}$/.test(prev || ""), `the previous period's link: ${page.url()}`);
  const before = await examine("overview, the previous period", r, "overview", {
    charts: ["chart-days"],
  });
  check(before.h1 === `Overview of ${prev}`, `previous period's heading: ${before.h1}`);
  r = await navigating(() => page.click("p.periods a[rel=next]"));
  check(!query().get("period") || query().get("period") !== prev, `the next period's link: ${page.url()}`);
  settle("overview, back by the next link");

  // Keyboard: skip link first, then the navigation, sign-out and the
  // form; Enter on the skip link moves to the content, Enter on a
  // navigation link follows it.
  await visit("/overview");
  const seq = await tabs(12);
  const at_ = (pred) => seq.findIndex(pred);
  const skip = at_((f) => f.cls === "skip");
  const nav = ["Overview", "Accounts", "Usage", "Invoices"].map((t) =>
    at_((f) => f.tag === "a" && f.text === t),
  );
  const out = at_((f) => f.tag === "button" && f.text === "Sign out");
  const field = at_((f) => f.id === "period");
  const show = at_((f) => f.tag === "button" && f.text === "Show");
  check(skip === 0, `keyboard: the first Tab reaches the skip link (${seq[0]?.text})`);
  check(
    nav.every((i, k) => i > skip && (k === 0 || i > nav[k - 1])),
    `keyboard: then the navigation in order (${nav})`,
  );
  check(out > nav[3], `keyboard: then the sign-out button (${out})`);
  check(field > out && show > field, `keyboard: then the period field and Show (${field}, ${show})`);
  focusVisible("keyboard", seq.slice(0, Math.max(show, 0) + 1));
  await visit("/overview");
  await tabs(1);
  await page.keyboard.press("Enter");
  const target = await page.evaluate(() => document.activeElement.id);
  check(target === "main", `keyboard: Enter on the skip link moves focus to the content (${target})`);
  await visit("/overview");
  await tabs(nav[1] + 1);
  r = await navigating(() => page.keyboard.press("Enter"));
  check(pathOf() === "/accounts", `keyboard: Enter on 'Accounts' goes there (${page.url()})`);
  settle("keyboard");

  // Accounts: sorted as the headers say, filtered, another period.
  const accounts = await examine("accounts", r, "accounts");
  const table = () => page.evaluate(look).then((s) => s.tables.find((t) => t.id === "accounts"));
  const col = (t, key) => t.rows.map((row) => row.find((c) => c.key === key)?.text ?? "");
  const all = accounts.tables.find((t) => t.id === "accounts");
  check(all && all.rows.length >= 2, `accounts: at least two rows (${all?.rows.length})`);
  const ids = col(all, "account_id");
  const names = col(all, "name");
  const sortBy = async (header, sort, order) => {
    const link = await page.$$(`table#accounts thead th a`);
    let hit = null;
    for (const a of link)
      if ((await a.evaluate((e) => e.textContent)).replace(/ [▲▼]$/, "") === header) hit = a;
    if (!check(hit, `accounts: a sortable header '${header}'`)) return null;
    const resp = await navigating(() => hit.click());
    check(
      query().get("sort") === sort && query().get("order") === order,
      `accounts: '${header}' sorts by ${sort} ${order} (${page.url()})`,
    );
    const th = await page.$eval(`table#accounts thead th[aria-sort]`, (e) => [
      e.textContent,
      e.getAttribute("aria-sort"),
    ]);
    check(
      th[0].startsWith(header) && th[1] === (order === "asc" ? "ascending" : "descending"),
      `accounts: aria-sort on '${header}' (${th})`,
    );
    return resp;
  };
  r = await sortBy("Account", "account", "asc");
  let t = await table();
  check(
    JSON.stringify(col(t, "account_id")) === JSON.stringify([...ids].sort()),
    `accounts by account, ascending: ${col(t, "account_id")}`,
  );
  if (r) await examine("accounts, sorted by account", r, "accounts");
  r = await sortBy("Account", "account", "desc");
  t = await table();
  check(
    JSON.stringify(col(t, "account_id")) === JSON.stringify([...ids].sort().reverse()),
    `accounts by account, descending: ${col(t, "account_id")}`,
  );
  r = await sortBy("Revenue", "revenue", "asc");
  t = await table();
  const revenue = col(t, "revenue").map(Number);
  check(
    revenue.every((v, i) => i === 0 || v >= revenue[i - 1]),
    `accounts by revenue, ascending: ${revenue}`,
  );
  if (r) await examine("accounts, sorted by revenue", r, "accounts");

  // The filter: a word of the last account's name, typed into its field.
  const word = (names.at(-1) || ids.at(-1)).split(/\s+/).pop().toLowerCase();
  const matching = ids.filter(
    (id, i) => id.toLowerCase().includes(word) || names[i].toLowerCase().includes(word),
  );
  await page.click("#q", { clickCount: 3 });
  await page.keyboard.type(word);
  r = await navigating(() => page.keyboard.press("Enter"));
  check(query().get("q") === word, `accounts: the filter is in the URL (${page.url()})`);
  t = await table();
  check(
    JSON.stringify(col(t, "account_id").sort()) === JSON.stringify(matching.sort()),
    `accounts filtered by '${word}': ${col(t, "account_id")}, want ${matching}`,
  );
  check(matching.length < ids.length, `the filter '${word}' leaves some accounts out`);
  await examine("accounts, filtered", r, "accounts");

  // Another period through the form.
  await page.click("#q", { clickCount: 3 });
  await page.keyboard.press("Backspace");
  await page.$eval("#period", (e, p) => {
    e.value = p;
  }, prev);
  r = await navigating(() => page.click("form.filters button[type=submit]"));
  check(query().get("period") === prev, `accounts: the period from the form (${page.url()})`);
  const older = await examine("accounts, the previous period", r, "accounts");
  check(older.h1 === `Accounts in ${prev}`, `accounts' heading: ${older.h1}`);

  // A download, as a person makes it: a click on the link; the browser
  // saves the file, which must be the table.
  const cdp = await browser.target().createCDPSession();
  await cdp.send("Browser.setDownloadBehavior", {
    behavior: "allow",
    downloadPath: opts.shots,
    eventsEnabled: true,
  });
  let begun = null;
  cdp.on("Browser.downloadWillBegin", (e) => {
    begun = e;
    expected.add(e.url);
  });
  const saved = new Promise((resolve) => {
    cdp.on("Browser.downloadProgress", (e) => {
      if (e.state !== "inProgress") resolve(e.state);
    });
  });
  const csvLink = await page.$("#accounts");
  const csvHref = await csvLink.evaluate(
    (tb) => tb.closest(".table-wrap").nextElementSibling.querySelector("a[download]").href,
  );
  expected.add(csvHref);
  await page.$eval("#accounts", (tb) =>
    tb.closest(".table-wrap").nextElementSibling.querySelector("a[download]").scrollIntoView(),
  );
  const csvAnchor = await page.evaluateHandle((tb) =>
    tb.closest(".table-wrap").nextElementSibling.querySelector("a[download]"),
    csvLink,
  );
  await csvAnchor.click();
  const state = await Promise.race([
    saved,
    new Promise((res) => setTimeout(() => res("timed out"), 15000)),
  ]);
  check(state === "completed", `the CSV download: ${state}`);
  check(begun?.suggestedFilename === "accounts.csv", `the download's name: ${begun?.suggestedFilename}`);
  const file = join(opts.shots, "accounts.csv");
  if (check(existsSync(file), `the download is saved as ${file}`))
    compareCSV("the downloaded CSV", (await table()), readFileSync(file, "utf8"));
  settle("the CSV download");

  // One account: its link in the table.
  const other = ids.find((id) => id !== opts.account);
  r = await visit("/accounts");
  const own = await page.$(`table#accounts a[href^="/accounts/${opts.account}?"]`);
  if (check(own, `accounts: a link to ${opts.account}`)) {
    r = await navigating(() => own.click());
    check(pathOf() === `/accounts/${opts.account}`, `the account's page: ${page.url()}`);
    await examine(`account ${opts.account}`, r, "account", { charts: ["chart-vcpu"] });
    r = await navigating(() => page.click("p.periods a[rel=prev]"));
    await examine(`account ${opts.account}, the previous period`, r, "account");
  }

  // Usage, by day and by hour.
  r = await visit("/usage");
  await examine("usage", r, "usage", { charts: ["chart-vcpu"] });
  await page.select("#granularity", "hour");
  r = await navigating(() => page.click("form.filters button[type=submit]"));
  check(query().get("granularity") === "hour", `usage by hour: ${page.url()}`);
  await examine("usage by hour", r, "usage", { charts: ["chart-vcpu"] });

  // Invoices, then only the final ones through the form.
  r = await visit("/invoices");
  const inv = await examine("invoices", r, "invoices");
  check(inv.tables[0]?.rows.length > 0, "invoices: the documents are listed");
  await page.select("#status", "final");
  r = await navigating(() => page.click("form.filters button[type=submit]"));
  check(
    r && r.status() === 200 && query().get("status") === "final",
    `invoices filtered by status: HTTP ${r?.status()} ${page.url()}`,
  );
  if (r && r.status() === 200) {
    const fin = await examine("invoices, final", r, "invoices");
    const st = fin.tables[0] ? col(fin.tables[0], "status") : [];
    check(st.length > 0 && st.every((s) => s === "final"), `invoices, final only: ${st}`);
  } else settle("invoices, final");

  // A wrong query typed into the address bar: a page saying what is
  // wrong, not JSON.
  r = await visit("/overview?period=2026-13", { status: 400 });
  check(
    r.headers()["content-type"]?.startsWith("text/html") &&
      (await page.evaluate(() => document.body.innerText)).includes("2026-13"),
    "a wrong period is a page naming it",
  );
  await examine("a wrong period", r, null);

  // The dark scheme has colors of its own: the contrast of those too.
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
  for (const [path, kind, charts] of [
    ["/overview", "overview", ["chart-days"]],
    ["/accounts", "accounts", []],
    ["/invoices", "invoices", []],
  ])
    await examine(`${path.slice(1)}, dark`, await visit(path), kind, { charts });
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);

  // Every link the pages showed answers (a redirect to a page that does).
  for (const l of [...linksSeen].sort()) {
    let g = await get(l);
    if (g.status === 303 && g.location.startsWith("/")) g = await get(g.location);
    check(g.status === 200, `the link ${l}: HTTP ${g.status}`);
  }

  // Sign-out ends the session.
  await visit("/overview");
  await signOut("sign-out of the finance key");
  await visit("/overview");
  check(pathOf() === "/sign-in", `after sign-out /overview sends to the sign-in page (${page.url()})`);
  settle("after sign-out");

  // An account key: its own account, nothing else (from the sign-in
  // page itself: the one shown above would come back to /overview).
  await visit("/sign-in");
  r = await signIn("sign-in with the account key", opts["account-key"], "click");
  check(
    pathOf() === `/accounts/${opts.account}`,
    `the account key lands on its account (${page.url()})`,
  );
  await examine(`account ${opts.account}, as the account`, r, "account", {
    charts: ["chart-vcpu"],
  });
  r = await visit("/invoices");
  const mine = await examine("invoices, as the account", r, "invoices");
  const owners = mine.tables[0] ? col(mine.tables[0], "account_id") : [];
  check(
    owners.length > 0 && owners.every((a) => a === opts.account),
    `an account's invoices are its own: ${owners}`,
  );
  r = await visit("/overview", { status: 403 });
  check(
    (await page.evaluate(() => document.body.innerText)).includes("Wrong role"),
    "the overview is refused to an account key, saying why",
  );
  await examine("overview refused to an account", r, null);
  if (check(other, "another account to try")) {
    r = await visit(`/accounts/${other}`, { status: 404 });
    check(
      r.headers()["content-type"]?.startsWith("text/html") &&
        (await page.evaluate(() => document.body.innerText)).includes("Not found"),
      "another account's page is a page saying it is not found",
    );
    await examine("another account's page", r, null);
  }
  await visit(`/accounts/${opts.account}`);
  await signOut("sign-out of the account key");
  await visit(`/accounts/${opts.account}`);
  check(pathOf() === "/sign-in", `after sign-out the account page sends to sign-in (${page.url()})`);
  settle("after the account's sign-out");
} catch (e) {
  check(false, `the run stopped: ${e.stack || e}`);
} finally {
  await browser.close();
}
console.log(`${checks - fails} passed, ${fails} failed`);
process.exit(fails ? 1 : 0);
