// hookstorm report page: draws the JSON in #data with plain DOM and SVG.
// Errors land in #errors (and body[data-errors]); body[data-marks] is the
// number of attempt marks laid out on the timelines, body[data-drawn] the
// number currently drawn (rows out of view are not drawn).
(function () {
  "use strict";
  var errors = document.getElementById("errors");
  function report(msg) {
    var li = document.createElement("li");
    li.textContent = msg;
    errors.appendChild(li);
    document.body.setAttribute("data-errors", String(errors.children.length));
  }
  window.onerror = function (msg, src, line) { report(msg + " (line " + line + ")"); };
  document.body.setAttribute("data-errors", "0");

  var SVG = "http://www.w3.org/2000/svg";
  // How each way of drawing an outcome is coloured: only wrong is red.
  var DRAWN = { right: "var(--ok)", wrong: "var(--fail)", unsettled: "var(--info)", "by-design": "var(--by-design)" };
  var ROW = 16, RIGHT = 24, AXIS = 34, CHAR = 6.7, PAD = 8;

  function el(tag, attrs, parent) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "html") e.innerHTML = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    if (parent) parent.appendChild(e);
    return e;
  }
  function sv(tag, attrs, parent) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    if (parent) parent.appendChild(e);
    return e;
  }
  function title(node, text) { sv("title", { text: text }, node); return node; }
  function fmtMs(ms) {
    if (ms >= 60000) return (ms / 60000).toFixed(1) + " min";
    if (ms >= 1000) return (ms / 1000).toFixed(ms >= 10000 ? 0 : 1) + " s";
    if (ms >= 10 || ms === 0) return Math.round(ms) + " ms";
    var digits = ms >= 1 ? 1 : ms >= 0.1 ? 2 : 3;
    return String(Number(ms.toFixed(digits))) + " ms";
  }
  function slug(s) { return String(s).replace(/[^A-Za-z0-9_-]/g, "_"); }
  function badge(word, parent) {
    var cls = /FAIL/.test(word) || word === "fail" || word === "not met" ? "fail"
      : word === "pass" || word === "met" ? "pass"
      : word === "informational" ? "informational"
      : /non-strict/.test(word) ? "non-strict" : /unknown|not established/.test(word) ? "unknown" : "skipped";
    return el("span", { "class": "badge v-" + cls, text: word }, parent);
  }
  function niceStep(span, n) {
    var raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * mag >= raw) return steps[i] * mag;
    return 10 * mag;
  }
  function count(n, one, many) { return n + " " + (n === 1 ? one : many); }

  var data = JSON.parse(document.getElementById("data").textContent);
  var app = document.getElementById("app");
  app.innerHTML = "";
  var OUTCOMES = data.outcomes || [];
  var state = { marks: 0, wrong: 0, cited: 0, timelines: [] };
  if (data.kind === "bench") renderBench(data); else renderRun(data);
  document.body.setAttribute("data-marks", String(state.marks));
  document.body.setAttribute("data-wrong", String(state.wrong));
  document.body.setAttribute("data-cited", String(state.cited));
  updateDrawn();

  function updateDrawn() {
    var n = document.querySelectorAll("svg .mark").length;
    document.body.setAttribute("data-drawn", String(n));
  }
  function colorOf(o) { return OUTCOMES[o] ? DRAWN[OUTCOMES[o].drawn] : "var(--unknown)"; }
  // A refusal is a ring, an acceptance a dot, a death a square: the shape
  // says what the receiver did, the colour whether it was right.
  function shapeOf(o) { return /dead/.test(o.outcome) ? "square" : /^rejected/.test(o.outcome) ? "ring" : "dot"; }

  // ---- run report -------------------------------------------------------
  function renderRun(r) {
    var h = el("h1", { text: "hookstorm " + (r.command || "run") + " " + r.run_id + " " }, app);
    badge(r.interrupted ? "interrupted" : r.verdict, h);
    var meta = el("p", { "class": "meta" }, app);
    [["exit code", r.exit_code], ["seed", r.seed], ["profile", r.profile],
     ["time scale", r.time_scale], ["target", r.target], ["started", r.started_at],
     ["duration", fmtMs(r.duration_s * 1000)], ["hookstorm", r.hookstorm_version],
     ["machine", r.machine || "?"]].forEach(function (kv) {
      var s = el("span", {}, meta);
      s.appendChild(document.createTextNode(kv[0] + " "));
      el("b", { text: String(kv[1]) }, s);
      s.appendChild(document.createTextNode(" · "));
    });
    failures(r);
    statement(r);
    el("p", { text: r.coverage_line }, app);

    // The verdict matrix.
    el("h2", { text: "Verdicts" }, app);
    // The invariants any scenario checked, in I1..I9 order.
    var names = [], ids = {};
    r.scenarios.forEach(function (s) {
      s.check.results.forEach(function (res) {
        if (names.indexOf(res.name) < 0) { names.push(res.name); ids[res.name] = res.id; }
      });
    });
    names.sort(function (a, b) { return ids[a] < ids[b] ? -1 : ids[a] > ids[b] ? 1 : 0; });
    var t = el("table", { "class": "matrix" }, app);
    var hr = el("tr", {}, el("thead", {}, t));
    el("th", { text: "scenario" }, hr);
    el("th", { text: "verdict" }, hr);
    names.forEach(function (n) { el("th", { "class": "inv", text: ids[n] + " " + n }, hr); });
    var tb = el("tbody", {}, t);
    r.scenarios.forEach(function (s) {
      var tr = el("tr", {}, tb);
      var td = el("td", {}, tr);
      el("a", { href: "#s-" + slug(s.name), text: s.name }, td);
      badge(s.word, el("td", {}, tr));
      if (s.skipped) {
        el("td", { colspan: String(Math.max(names.length, 1)), "class": "note", text: "skipped: " + s.skipped.reason }, tr);
        return;
      }
      names.forEach(function (n) {
        var res = s.check.results.filter(function (x) { return x.name === n; })[0];
        if (!res) { el("td", { "class": "cell" }, tr); return; }
        var c = el("td", { "class": "cell c-" + res.grade, title: res.grade + ": " + res.summary }, tr);
        el("a", { href: "#r-" + slug(s.name) + "-" + slug(n),
          text: { pass: "✓", informational: "i", fail: "✗", "non-strict": "!", unknown: "?" }[res.grade] || "?" }, c);
      });
    });
    el("p", { "class": "legend", text: "✓ pass · i informational (a pass with something worth knowing) · ! non-strict (fails only with --strict) · ? unknown · ✗ fail" }, app);

    el("h2", { text: "Reproduce" }, app);
    el("p", { text: "Seed " + r.seed + ". Each scenario's command reproduces it; the whole run:" }, app);
    el("pre", { text: (r.scenarios[0] && r.scenarios[0].reproduce.replace(/ --scenario \S+/, "")) || "hookstorm " + (r.command || "run") + " --seed " + r.seed }, app);

    var legend = el("p", { "class": "legend" }, app);
    OUTCOMES.forEach(function (o) {
      var s = el("span", { title: o.meaning }, legend);
      var shape = shapeOf(o);
      el("span", { "class": "sw", style: shape === "ring" ? "background:#fff;border:2px solid " + DRAWN[o.drawn]
        : "background:" + DRAWN[o.drawn] + (shape === "square" ? ";border-radius:0" : "") }, s);
      s.appendChild(document.createTextNode(o.word));
    });
    var envS = el("span", {}, legend);
    el("span", { "class": "sw", style: "background:#90caf9;border-radius:0" }, envS);
    envS.appendChild(document.createTextNode("retry window (from the previous send)"));
    var aS = el("span", {}, legend);
    el("span", { "class": "sw", style: "background:#78909c;border-radius:0;height:3px" }, aS);
    aS.appendChild(document.createTextNode("send to answer"));
    var fS = el("span", {}, legend);
    el("span", { "class": "sw", style: "background:#ce93d8;border-radius:0" }, fS);
    fS.appendChild(document.createTextNode("injected fault"));

    r.scenarios.forEach(function (s) { renderScenario(r, s); });
  }

  // The history lines an evidence item cites, each a link into the history.
  function lineLinks(li, s, e) {
    e.lines.forEach(function (n) {
      el("a", { href: s.history, "class": "line", title: s.history + " line " + n, text: "L" + n }, li);
      li.appendChild(document.createTextNode(" "));
    });
  }

  // What is red, first: each failing (or undecided) invariant's finding,
  // its evidence and the command that reproduces it, before the statement
  // and the matrix.
  function failures(r) {
    var items = [];
    r.scenarios.forEach(function (s) {
      if (s.skipped) return;
      s.check.results.forEach(function (res) {
        var bad = res.grade === "fail" || (res.grade === "non-strict" && r.strict);
        if (bad || res.grade === "unknown") items.push([s, res, bad]);
      });
    });
    if (!items.length) return;
    items.sort(function (a, b) { return (b[2] ? 1 : 0) - (a[2] ? 1 : 0); });
    var sec = el("section", { id: "failures" }, app);
    var bad = items.filter(function (x) { return x[2]; }).length;
    el("h2", { text: bad ? count(bad, "failure", "failures") + (items.length > bad ? ", " + (items.length - bad) + " not decided" : "")
      : count(items.length, "check", "checks") + " not decided" }, sec);
    items.forEach(function (x) {
      var s = x[0], res = x[1];
      var box = el("div", { id: "f-" + slug(s.name) + "-" + slug(res.name), "class": x[2] ? "fail-block" : "unknown-block" }, sec);
      var h3 = el("h3", {}, box);
      el("a", { href: "#r-" + slug(s.name) + "-" + slug(res.name), text: s.name + " · " + res.id + " " + res.name + " " }, h3);
      badge(res.grade, h3);
      el("div", { text: res.summary }, box);
      if (res.evidence.length) {
        var ul = el("ul", { "class": "evidence" }, box);
        res.evidence.slice(0, 5).forEach(function (e) {
          var li = el("li", { text: e.key + (e.account ? " (" + e.account + ")" : "") + ": " + e.what + " " }, ul);
          lineLinks(li, s, e);
        });
        if (res.evidence_total > Math.min(res.evidence.length, 5))
          el("li", { text: "… and " + (res.evidence_total - Math.min(res.evidence.length, 5)) + " more (in " + s.name + " below)" }, ul);
      }
      el("pre", { text: s.reproduce }, box);
      if (x[2] && s.when_it_fails)
        el("p", { "class": "note", text: "When it fails: " + s.when_it_fails }, box);
    });
    // Where the first finding's evidence ends on the page, for the tests
    // that hold it to the first screen.
    var first = sec.querySelector("div");
    if (first) document.body.setAttribute("data-first-failure-bottom",
      String(Math.round(first.getBoundingClientRect().bottom + window.scrollY)));
  }

  // The conformance statement: levels, skips, digests.
  function statement(r) {
    var c = r.conformance;
    if (!c) return;
    var sec = el("section", { id: "conformance", "class": "statement" }, app);
    var met = c.levels.filter(function (l) { return l.status === "met"; }).length;
    el("h2", { text: "Conformance: met " + met + " of " + (c.sender ?
      count(c.levels.length, "sender level", "sender levels") : count(c.levels.length, "level", "levels")) }, sec);
    var t = el("table", { "class": "levels" }, sec);
    c.levels.forEach(function (l) {
      var tr = el("tr", { "data-level": l.id, "data-status": l.status }, t);
      badge(l.status.replace(/-/g, " "), el("td", {}, tr));
      el("td", { text: l.name }, tr);
      el("td", { "class": "note", text: l.why }, tr);
    });
    el("p", { "class": "meta", text: "profile " + c.profile + " · seed " + c.seed + " · hookstorm " + c.hookstorm_version + (c.strict ? " · strict" : "") }, sec);
    if (c.skipped.length) {
      var ul = el("ul", { "class": "note" }, sec);
      c.skipped.forEach(function (k) { el("li", { text: "skipped " + k.scenario + ": " + k.reason }, ul); });
    }
    if (r.report_sha256)
      el("p", { "class": "digest", text: "SHA-256 of report.json: " + r.report_sha256 + " (hookstorm verify REPORT_DIR checks it and every file below)" }, sec);
    if (c.files.length) {
      var d = el("details", {}, sec);
      el("summary", { text: "SHA-256 of the " + count(c.files.length, "history and state file", "history and state files") }, d);
      var ft = el("table", { "class": "digests" }, d);
      c.files.forEach(function (f) {
        var tr = el("tr", {}, ft);
        el("td", { text: f.path }, tr);
        el("td", { "class": "digest", text: f.sha256 }, tr);
      });
    }
  }

  // What a row is: a delivery of a run, an event a sender was asked to send.
  function rowNoun(r, n) {
    return r.command === "sink" ? count(n, "event", "events") : count(n, "delivery", "deliveries");
  }

  function countsLine(r, s) {
    var c = s.check.counts, parts = [];
    OUTCOMES.forEach(function (o) {
      var n = (c.outcomes || {})[o.outcome];
      if (n) parts.push(n + " " + o.word);
    });
    return rowNoun(r, c.deliveries) + " · " + count(c.attempts, "attempt", "attempts") +
      (parts.length ? ": " + parts.join(", ") : "") + " · " + fmtMs(s.duration_s * 1000);
  }

  function renderScenario(r, s) {
    var sec = el("section", { id: "s-" + slug(s.name) }, app);
    var h = el("h2", { text: s.name + " " }, sec);
    badge(s.word, h);
    el("p", { text: s.description }, sec);
    if (s.skipped) { el("p", { "class": "note", text: "skipped: " + s.skipped.reason }, sec); return; }
    el("p", { "class": "meta", text: countsLine(r, s) }, sec);
    el("pre", { text: s.reproduce }, sec);
    var tl = null;
    if (s.timeline && !s.timeline.error) tl = timeline(r, sec, s, s.timeline);
    else if (s.timeline && s.timeline.error) el("p", { "class": "note", text: "no timeline: " + s.timeline.error }, sec);
    s.check.results.forEach(function (res) {
      var bad = res.grade === "fail" || (res.grade === "non-strict" && r.strict);
      var box = el("div", { id: "r-" + slug(s.name) + "-" + slug(res.name),
        "class": bad ? "fail-block" : res.grade === "unknown" ? "unknown-block" : res.grade === "non-strict" ? "warn-block" : "" }, sec);
      var h3 = el("h3", { text: res.id + " " + res.name + " " }, box);
      badge(res.grade, h3);
      el("div", { text: res.summary }, box);
      if (res.evidence.length) {
        var ul = el("ul", { "class": "evidence" }, box);
        res.evidence.forEach(function (e) {
          var li = el("li", {}, ul);
          var a = el("a", { href: "#s-" + slug(s.name), text: e.key + (e.account ? " (" + e.account + ")" : "") }, li);
          a.addEventListener("click", function () { if (tl) tl.focus(e.key); });
          li.appendChild(document.createTextNode(": " + e.what + " "));
          lineLinks(li, s, e);
          var more = (e.lines_total || 0) - e.lines.length;
          if (more > 0) li.appendChild(document.createTextNode("and " + more + " more"));
        });
        if (res.evidence_total > res.evidence.length)
          el("li", { text: "… and " + (res.evidence_total - res.evidence.length) + " more (report.json)" }, ul);
      }
      if (bad && s.when_it_fails)
        el("p", { "class": "note", text: "When it fails: " + s.when_it_fails }, box);
    });
    if (s.check.observations && s.check.observations.length) {
      var ob = el("ul", { "class": "informational" }, sec);
      s.check.observations.forEach(function (o) { el("li", { text: "informational: " + o }, ob); });
    }
    var real = s.check.dead_letters.filter(function (d) { return !d.by_design; });
    var designed = s.check.dead_letters.length - real.length;
    if (designed)
      el("p", { "class": "note by-design", text: count(designed, "delivery", "deliveries") + " died by design: the scenario's own faults killed " + (designed === 1 ? "it" : "them") + " on purpose." }, sec);
    if (real.length) {
      el("h3", { "class": "dead-letters", text: "Dead letters" }, sec);
      var t = el("table", {}, sec);
      var hr = el("tr", {}, t);
      ["delivery", "key", "account", "attempts", "last status", "last error", "stored later"].forEach(function (n) { el("th", { text: n }, hr); });
      real.forEach(function (d) {
        var tr = el("tr", {}, t);
        [d.delivery, d.key, d.account, d.attempts, d.last_status == null ? "—" : d.last_status,
         d.last_error || "—", d.recovered ? "yes" : "no"].forEach(function (v) { el("td", { text: String(v) }, tr); });
      });
    }
    if (s.notes.length) {
      var ul = el("ul", { "class": "note" }, sec);
      s.notes.forEach(function (n) { el("li", { text: n }, ul); });
    }
  }

  // Pairs fault events into bands: a kill with the next restart, a cut
  // with the next restore, a pause with the next resume; the rest are points.
  function faultBands(faults, span) {
    var opens = { kill: "restart", terminate: "restart", pause: "resume", "cut-database": "restore-database" };
    var bands = [], open = [];
    faults.forEach(function (f) {
      if (opens[f.fault]) { open.push(f); return; }
      for (var i = 0; i < open.length; i++) {
        if (opens[open[i].fault] === f.fault) {
          bands.push({ from: open[i].t, to: f.t, label: open[i].fault + " → " + f.fault,
            text: open[i].action + " … " + f.action + (f.detail ? " (" + f.detail + ")" : ""), lines: [open[i].line, f.line] });
          open.splice(i, 1);
          return;
        }
      }
      bands.push({ from: f.t, to: f.t, label: f.fault, text: f.action + (f.detail ? " (" + f.detail + ")" : ""), lines: [f.line] });
    });
    open.forEach(function (o) {
      bands.push({ from: o.t, to: span, label: o.fault + " (not undone)", text: o.action, lines: [o.line] });
    });
    return bands;
  }

  // A row's full label: key, account, and what the delivery was meant to be.
  function label(d) {
    var intent = d.intent || "genuine";
    return (d.cited ? "✗ " : "") + d.key + " · " + d.account + (intent !== "genuine" ? " · " + intent + (d.detail ? " (" + d.detail + ")" : "") : "");
  }

  function timeline(r, sec, s, tl) {
    var rows = tl.deliveries, span = Math.max(tl.span_ms, 1);
    var box = el("div", { "class": "tl", "data-scenario": s.name, "data-marks": String(tl.attempts) }, sec);
    state.marks += tl.attempts;
    rows.forEach(function (d) {
      if (d.cited) state.cited++;
      d.a.forEach(function (m) { if (OUTCOMES[m[1]] && OUTCOMES[m[1]].drawn === "wrong") state.wrong++; });
    });
    var width = Math.max(box.clientWidth || 1000, 400);
    // The label column fits the longest label, up to 45% of the width
    // (longer ones end in … and show whole on hover).
    var longest = rows.reduce(function (m, d) { return Math.max(m, label(d).length); }, 12);
    var GUTTER = Math.min(Math.max(Math.ceil(longest * CHAR) + 16, 150), Math.floor(width * 0.45));
    var maxChars = Math.floor((GUTTER - 16) / CHAR);
    var plotW = width - GUTTER - RIGHT - PAD;
    // Times inside the plot; what runs past its end (a window, an answer)
    // is cut at the edge, never drawn into the margin.
    function x(t) { return GUTTER + PAD + (Math.min(Math.max(t, 0), span) / span) * plotW; }
    var bands = faultBands(tl.faults, span);
    if (rows.some(function (d) { return d.cited; }))
      el("p", { "class": "note cited-note", text: "✗ rows first: the keys a failing invariant cites, marked red." }, box);

    // The axis: ticks, fault bands with labels, and an aggregate of the
    // outcomes over time so a scenario with thousands of rows still reads.
    var axis = sv("svg", { "class": "axis", width: width, height: AXIS + 40 }, box);
    var buckets = 120, agg = [], n = OUTCOMES.length;
    for (var b = 0; b < buckets; b++) { var z = []; for (var o = 0; o < n; o++) z.push(0); agg.push(z); }
    var maxAgg = 1;
    rows.forEach(function (d) {
      d.a.forEach(function (m) {
        var k = Math.min(buckets - 1, Math.floor((m[0] / span) * buckets));
        if (m[1] != null && m[1] < n) agg[k][m[1]]++;
      });
    });
    agg.forEach(function (a) { maxAgg = Math.max(maxAgg, a.reduce(function (p, q) { return p + q; }, 0)); });
    var bw = plotW / buckets;
    agg.forEach(function (a, k) {
      var y = 38;
      for (var o = 0; o < n; o++) {
        if (!a[o]) continue;
        var hgt = (a[o] / maxAgg) * 34;
        y -= hgt;
        title(sv("rect", { x: GUTTER + PAD + k * bw, y: y, width: Math.max(bw - 0.5, 0.5), height: hgt, fill: colorOf(o) }, axis),
          a[o] + " " + OUTCOMES[o].word + " near " + fmtMs((k + 0.5) * span / buckets));
      }
    });
    sv("text", { x: 4, y: 24, text: "attempts over time" }, axis);
    var step = niceStep(span, 8);
    for (var t = 0; t <= span; t += step) {
      sv("line", { x1: x(t), x2: x(t), y1: 40, y2: 46, stroke: "#999" }, axis);
      // A label near the right edge ends at its tick, so none is cut off.
      var end = x(t) + 60 > width;
      sv("text", { x: end ? x(t) - 2 : x(t) + 2, y: 58, "text-anchor": end ? "end" : "start", text: fmtMs(t) }, axis);
    }
    sv("text", { x: 4, y: 58, text: rowNoun(r, rows.length) }, axis);
    bands.forEach(function (bd) {
      var w = Math.max(x(bd.to) - x(bd.from), 2);
      title(sv("rect", { x: x(bd.from), y: 62, width: w, height: 10, fill: "#ab47bc", opacity: 0.8 }, axis),
        bd.label + ": " + bd.text + " (history line " + bd.lines.join(", ") + ")");
    });

    var viewH = Math.min(Math.max(rows.length, 1) * ROW + 4, 420);
    var view = el("div", { "class": "view", style: "height:" + viewH + "px" }, box);
    el("div", { style: "height:" + (rows.length * ROW + 4) + "px" }, view);
    var svg = sv("svg", { width: width, height: viewH }, view);
    var focused = -1;
    if (tl.attempts_left_out)
      el("p", { "class": "note", text: tl.attempts_left_out + " more attempts not drawn (the history has them all)" }, sec);
    if (tl.faults_left_out)
      el("p", { "class": "note", text: tl.faults_left_out + " more fault events not drawn" }, sec);

    function draw() {
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      var top = view.scrollTop;
      svg.setAttribute("style", "top:" + top + "px");
      var first = Math.floor(top / ROW), last = Math.min(rows.length, first + Math.ceil(viewH / ROW) + 1);
      bands.forEach(function (bd) {
        title(sv("rect", { x: x(bd.from), y: 0, width: Math.max(x(bd.to) - x(bd.from), 1.5), height: viewH,
          fill: "#ce93d8", opacity: bd.to > bd.from ? 0.25 : 0.6 }, svg), bd.label + ": " + bd.text);
      });
      for (var i = first; i < last; i++) {
        var d = rows[i], y = i * ROW - top + ROW / 2 + 2;
        if (d.cited) sv("rect", { "class": "row-cited", x: 0, y: y - ROW / 2, width: width, height: ROW }, svg);
        if (i === focused) sv("rect", { "class": "row-hl", x: 0, y: y - ROW / 2, width: width, height: ROW }, svg);
        var full = label(d);
        var shown = full.length > maxChars ? full.slice(0, maxChars - 1) + "…" : full;
        title(sv("text", { x: 4, y: y + 4, "class": d.cited ? "label cited" : "label", text: shown }, svg),
          d.id + " · key " + d.key + " · account " + d.account + " · " + (d.intent || "genuine") + (d.detail ? " (" + d.detail + ")" : "") +
          (d.cited ? " · cited by " + d.cited.join(", ") : ""));
        // Each retry's window: where the schedule puts it, from the
        // previous attempt's send (the gap the notes measure).
        d.a.forEach(function (m) {
          var w = m[9];
          if (!w) return;
          title(sv("rect", { "class": "window", x: x(w[0]), y: y - 5, width: Math.max(x(w[1]) - x(w[0]), 1), height: 10, fill: "#90caf9", opacity: 0.45 }, svg),
            "attempt " + m[2] + " due " + fmtMs(w[0]) + "–" + fmtMs(w[1]) + " from the start (" + (r.command === "sink"
              ? "the schedule's window after the end of the attempt before)"
              : "its schedule's wait after the previous send, plus " + fmtMs(tl.slack_ms) + " for the attempt's own time)"));
        });
        for (var j = 1; j < d.a.length; j++)
          sv("line", { x1: x(d.a[j - 1][0]), x2: x(d.a[j][0]), y1: y, y2: y, stroke: "#ddd" }, svg);
        d.a.forEach(function (m) {
          // The answer: a bar from the send to the answer's head.
          if (m[6] != null && m[6] > 0)
            sv("rect", { "class": "answer", x: x(m[0]), y: y - 1.5, width: Math.max(x(m[0] + m[6]) - x(m[0]), 1), height: 3, fill: "#78909c" }, svg);
        });
        d.a.forEach(function (m) {
          var o = OUTCOMES[m[1]] || { word: "?", drawn: "unsettled", outcome: "?" };
          var tip = "attempt " + m[2] + (m[3] ? " (redelivery " + m[3] + ")" : "") + " at " + fmtMs(m[0]) + " · " +
            o.word + " · " + (m[4] == null ? "no answer" : "status " + m[4]) +
            (m[6] == null ? "" : " in " + fmtMs(m[6])) + (m[7] == null ? "" : " · fault " + tl.fault_names[m[7]]) +
            (m[8] ? " · " + m[8] : "") + " · history line " + m[5];
          var cls = "mark o-" + o.outcome + " d-" + o.drawn, shape = shapeOf(o);
          var mk = shape === "square"
            ? sv("rect", { "class": cls, x: x(m[0]) - 4, y: y - 4, width: 8, height: 8, fill: DRAWN[o.drawn] }, svg)
            : shape === "ring"
            ? sv("circle", { "class": cls, cx: x(m[0]), cy: y, r: 3.5, fill: "#fff", stroke: DRAWN[o.drawn], "stroke-width": 2.5 }, svg)
            : sv("circle", { "class": cls, cx: x(m[0]), cy: y, r: 4, fill: DRAWN[o.drawn],
              stroke: m[7] == null ? "none" : "#6a1b9a", "stroke-width": 2 }, svg);
          title(mk, tip);
        });
      }
      updateDrawn();
    }
    view.addEventListener("scroll", function () { window.requestAnimationFrame(draw); });
    draw();
    var api = {
      focus: function (key) {
        for (var i = 0; i < rows.length; i++) if (rows[i].key === key) { focused = i; break; }
        if (focused >= 0) view.scrollTop = Math.max(0, focused * ROW - viewH / 2);
        draw();
      }
    };
    state.timelines.push(api);
    return api;
  }

  // ---- bench report -----------------------------------------------------
  function renderBench(b) {
    var h = el("h1", { text: "hookstorm bench " + b.run_id + " " }, app);
    badge(b.check ? b.check.verdict : "unchecked", h);
    el("p", { "class": "meta", text: b.mode + " · " + b.target + " · profile " + b.profile + " · seed " + b.seed + " · " +
      b.connections + " connections · " + b.duration_s.toFixed(1) + " s measured · " + b.requests + " requests · " +
      Math.round(b.achieved_rate) + " req/s" + (b.target_rate ? " (target " + Math.round(b.target_rate) + "/s)" : "") +
      " · errors " + (b.error_rate * 100).toFixed(2) + "%" }, app);
    if (b.rate_unreachable) el("p", { "class": "fail-block", text: "rate unreachable: " + b.rate_unreachable }, app);
    if (b.thresholds && b.thresholds.length) {
      el("h2", { text: "Thresholds" }, app);
      var tt = el("table", {}, app);
      b.thresholds.forEach(function (t) {
        var tr = el("tr", {}, tt);
        el("td", { text: t.threshold }, tr);
        el("td", { text: t.actual }, tr);
        badge(t.passed ? "pass" : "fail", el("td", {}, tr));
      });
    }
    el("h2", { text: "Latency by percentile (log scale)" }, app);
    percentilePlot(b);
    el("h2", { text: "Throughput and errors per second" }, app);
    throughputPlot(b);
    if (b.ramp) {
      el("h2", { text: "Ramp" }, app);
      var t = el("table", {}, app);
      var hr = el("tr", {}, t);
      ["step", "target /s", "achieved /s", "requests", "p99 ms", "errors"].forEach(function (n) { el("th", { text: n }, hr); });
      b.ramp.steps.forEach(function (st, i) {
        var tr = el("tr", { "class": b.ramp.broke_at === i ? "broke" : "" }, t);
        [i + 1, Math.round(st.rate), Math.round(st.achieved), st.requests, st.p99_ms.toFixed(2),
         (st.error_rate * 100).toFixed(2) + "%"].forEach(function (v) { el("td", { text: String(v) }, tr); });
      });
      el("p", { text: b.ramp.broke_at == null ? "no break within the ramp"
        : "breaks at step " + (b.ramp.broke_at + 1) + " (" + Math.round(b.ramp.steps[b.ramp.broke_at].rate) +
          "/s): p99 > " + b.ramp.p99_limit_ms + " ms or errors > " + (b.ramp.error_limit * 100) + "%" }, app);
    }
    if (b.check) {
      el("h2", { text: "Check" }, app);
      b.check.check.results.forEach(function (r) {
        var p = el("p", { text: r.id + " " }, app);
        badge(r.verdict, p);
        p.appendChild(document.createTextNode(" " + r.summary));
      });
    } else if (b.check_skipped) el("p", { "class": "note", text: "check skipped: " + b.check_skipped }, app);
  }

  function percentilePlot(b) {
    var curve = b.latency_curve || [];
    var W = 900, H = 320, L = 60, B = 40, T = 10, R = 20;
    var svg = sv("svg", { "class": "plot", width: W, height: H }, app);
    if (!curve.length) { sv("text", { x: L, y: 40, text: "no latency recorded" }, svg); return; }
    // x: log10(1 / (1 - q)), the usual HdrHistogram view; y: log10(ms).
    function xv(q) { return Math.log10(1 / Math.max(1 - q, 1e-6)); }
    var xmax = Math.max(xv(curve[curve.length - 1].quantile), 1);
    var vals = [];
    curve.forEach(function (c) { vals.push(c.corrected_ms, c.uncorrected_ms); });
    var ymin = Math.log10(Math.max(Math.min.apply(null, vals), 0.001)), ymax = Math.log10(Math.max.apply(null, vals));
    ymin = Math.floor(ymin); ymax = Math.max(Math.ceil(ymax), ymin + 1);
    function px(q) { return L + (xv(q) / xmax) * (W - L - R); }
    function py(ms) { return T + (1 - (Math.log10(Math.max(ms, 0.001)) - ymin) / (ymax - ymin)) * (H - T - B); }
    for (var e = ymin; e <= ymax; e++) {
      var yy = py(Math.pow(10, e));
      sv("line", { x1: L, x2: W - R, y1: yy, y2: yy, stroke: "#eee" }, svg);
      sv("text", { x: 4, y: yy + 4, text: fmtMs(Math.pow(10, e)) }, svg);
    }
    [0, 0.9, 0.99, 0.999, 0.9999, 0.99999].forEach(function (q) {
      if (xv(q) > xmax + 1e-9) return;
      sv("line", { x1: px(q), x2: px(q), y1: T, y2: H - B, stroke: "#eee" }, svg);
      sv("text", { x: px(q) + 2, y: H - B + 14, text: (q * 100).toPrecision(q >= 0.999 ? 6 : 3).replace(/\.?0+$/, "") + "%" }, svg);
    });
    sv("text", { x: L, y: H - 6, text: "percentile" }, svg);
    [["corrected_ms", "#c62828", "corrected (from the intended send)"], ["uncorrected_ms", "#1565c0", "uncorrected (from the actual send)"]].forEach(function (s, k) {
      var d = curve.map(function (c, i) { return (i ? "L" : "M") + px(c.quantile).toFixed(1) + "," + py(c[s[0]]).toFixed(1); }).join(" ");
      sv("path", { d: d, fill: "none", stroke: s[1], "stroke-width": 2, "class": "curve" }, svg);
      sv("rect", { x: L + 10, y: T + 8 + k * 16, width: 12, height: 4, fill: s[1] }, svg);
      sv("text", { x: L + 28, y: T + 13 + k * 16, text: s[2] }, svg);
    });
  }

  function throughputPlot(b) {
    var tp = b.throughput || [], errs = b.errors_per_second || [];
    var W = 900, H = 220, L = 60, B = 30, T = 10, R = 20;
    var svg = sv("svg", { "class": "plot", width: W, height: H }, app);
    if (!tp.length) { sv("text", { x: L, y: 40, text: "no throughput recorded" }, svg); return; }
    var max = Math.max.apply(null, tp.concat([1]));
    var bw = (W - L - R) / tp.length;
    var warm = Math.round(b.warmup_s);
    tp.forEach(function (n, i) {
      var h = (n / max) * (H - T - B);
      title(sv("rect", { x: L + i * bw, y: H - B - h, width: Math.max(bw - 1, 1), height: h, fill: i < warm ? "#bdbdbd" : "#42a5f5" }, svg),
        "second " + (i + 1) + ": " + n + " completed" + (errs[i] ? ", " + errs[i] + " errors" : "") + (i < warm ? " (warmup)" : ""));
      if (errs[i]) {
        var eh = (errs[i] / max) * (H - T - B);
        sv("rect", { x: L + i * bw, y: H - B - eh, width: Math.max(bw - 1, 1), height: Math.max(eh, 1), fill: "#c62828" }, svg);
      }
    });
    sv("text", { x: 4, y: T + 10, text: max + "/s" }, svg);
    sv("text", { x: L, y: H - 8, text: "seconds (grey: warmup, red: errors)" }, svg);
  }
})();
