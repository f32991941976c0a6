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
  var COLORS = ["var(--ok)", "var(--fail)", "var(--info)", "var(--dead)"];
  var OUTCOMES = ["ok", "fail", "info", "dead"];
  var ROW = 16, GUTTER = 170, RIGHT = 16, AXIS = 34;

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
    var cls = /FAIL/.test(word) || word === "fail" ? "fail" : word === "pass" ? "pass"
      : /non-strict/.test(word) ? "non-strict" : /unknown/.test(word) ? "unknown" : "skipped";
    return el("span", { "class": "badge v-" + cls, text: word }, parent);
  }
  function niceStep(span, n) {
    var raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * mag >= raw) return steps[i] * mag;
    return 10 * mag;
  }

  var data = JSON.parse(document.getElementById("data").textContent);
  var app = document.getElementById("app");
  app.innerHTML = "";
  var state = { marks: 0, timelines: [] };
  if (data.kind === "bench") renderBench(data); else renderRun(data);
  document.body.setAttribute("data-marks", String(state.marks));
  updateDrawn();

  function updateDrawn() {
    var n = document.querySelectorAll("svg .mark").length;
    document.body.setAttribute("data-drawn", String(n));
  }

  // ---- run report -------------------------------------------------------
  function renderRun(r) {
    var h = el("h1", { text: "hookstorm " + (r.command || "run") + " " + r.run_id + " " }, app);
    badge(r.interrupted ? "interrupted" : r.verdict, h);
    var meta = el("p", { "class": "meta" }, app);
    meta.innerHTML = "";
    [["exit code", r.exit_code], ["seed", r.seed], ["profile", r.profile],
     ["time scale", r.time_scale], ["target", r.target], ["started", r.started_at],
     ["duration", fmtMs(r.duration_s * 1000)], ["hookstorm", r.hookstorm_version],
     ["machine", r.machine || "?"]].forEach(function (kv) {
      var s = el("span", {}, meta);
      s.appendChild(document.createTextNode(kv[0] + " "));
      el("b", { text: String(kv[1]) }, s);
      s.appendChild(document.createTextNode(" · "));
    });
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
        var c = el("td", { "class": "cell c-" + res.verdict, title: res.summary }, tr);
        el("a", { href: "#r-" + slug(s.name) + "-" + slug(n),
          text: { pass: "✓", fail: "✗", "non-strict": "!", unknown: "?" }[res.verdict] || "?" }, c);
      });
    });

    // Coverage and reproduce.
    el("h2", { text: "Coverage and reproduce" }, app);
    var ul = el("ul", {}, app);
    r.scenarios.forEach(function (s) {
      if (s.skipped) el("li", { text: s.name + ": " + s.word + " — " + s.skipped.reason }, ul);
    });
    if (!ul.children.length) el("li", { text: "every selected scenario ran" }, ul);
    el("p", { text: "Seed " + r.seed + ". Each scenario's command reproduces it; the whole run:" }, app);
    el("pre", { text: (r.scenarios[0] && r.scenarios[0].reproduce.replace(/ --scenario \S+/, "")) || "hookstorm " + (r.command || "run") + " --seed " + r.seed }, app);

    var legend = el("p", { "class": "legend" }, app);
    OUTCOMES.forEach(function (o, i) {
      var s = el("span", {}, legend);
      el("span", { "class": "sw", style: "background:" + COLORS[i] }, s);
      s.appendChild(document.createTextNode(o));
    });
    var envS = el("span", {}, legend);
    el("span", { "class": "sw", style: "background:#90caf9;border-radius:0" }, envS);
    envS.appendChild(document.createTextNode("retry envelope (profile schedule)"));
    var fS = el("span", {}, legend);
    el("span", { "class": "sw", style: "background:#ce93d8;border-radius:0" }, fS);
    fS.appendChild(document.createTextNode("injected fault"));

    r.scenarios.forEach(function (s) { renderScenario(r, s); });
  }

  function renderScenario(r, s) {
    var sec = el("section", { id: "s-" + slug(s.name) }, app);
    var h = el("h2", { text: s.name + " " }, sec);
    badge(s.word, h);
    el("p", { text: s.description }, sec);
    if (s.skipped) { el("p", { "class": "note", text: "skipped: " + s.skipped.reason }, sec); return; }
    var c = s.check.counts;
    el("p", { "class": "meta", text: c.deliveries + (r.command === "sink" ? " events · " : " deliveries · ") + c.attempts + " attempts (" + c.ok + " ok, " +
      c.fail + " fail, " + c.info + " info) · " + c.dead + " dead · " + fmtMs(s.duration_s * 1000) }, sec);
    el("pre", { text: s.reproduce }, sec);
    var tl = null;
    if (s.timeline && !s.timeline.error) tl = timeline(r, sec, s, s.timeline);
    else if (s.timeline && s.timeline.error) el("p", { "class": "note", text: "no timeline: " + s.timeline.error }, sec);
    s.check.results.forEach(function (res) {
      var box = el("div", { id: "r-" + slug(s.name) + "-" + slug(res.name),
        "class": res.verdict === "pass" ? "" : res.verdict === "unknown" ? "unknown-block" : "fail-block" }, sec);
      var h3 = el("h3", { text: res.id + " " + res.name + " " }, box);
      badge(res.verdict, h3);
      el("div", { text: res.summary }, box);
      if (res.evidence.length) {
        var ul = el("ul", { "class": "evidence" }, box);
        res.evidence.forEach(function (e) {
          var li = el("li", {}, ul);
          var a = el("a", { href: "#s-" + slug(s.name), text: e.key + (e.account ? " (" + e.account + ")" : "") }, li);
          a.addEventListener("click", function () { if (tl) tl.focus(e.key); });
          li.appendChild(document.createTextNode(": " + e.what + " "));
          e.lines.forEach(function (n) {
            el("a", { href: s.history, "class": "line", title: s.history + " line " + n, text: "L" + n }, li);
            li.appendChild(document.createTextNode(" "));
          });
        });
        if (res.evidence_total > res.evidence.length)
          el("li", { text: "… and " + (res.evidence_total - res.evidence.length) + " more (report.json)" }, ul);
      }
      if (res.verdict !== "pass" && res.verdict !== "unknown" && s.when_it_fails)
        el("p", { "class": "note", text: "When it fails: " + s.when_it_fails }, box);
    });
    if (s.check.dead_letters.length) {
      el("h3", { text: "Dead letters" }, sec);
      var t = el("table", {}, sec);
      var hr = el("tr", {}, t);
      ["delivery", "key", "account", "attempts", "last status", "last error", "recovered"].forEach(function (n) { el("th", { text: n }, hr); });
      s.check.dead_letters.forEach(function (d) {
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

  function timeline(r, sec, s, tl) {
    var rows = tl.deliveries, span = Math.max(tl.span_ms, 1);
    var box = el("div", { "class": "tl", "data-scenario": s.name, "data-marks": String(tl.attempts) }, sec);
    state.marks += tl.attempts;
    var width = Math.max(box.clientWidth || 1000, 400);
    var plotW = width - GUTTER - RIGHT;
    function x(t) { return GUTTER + (t / span) * plotW; }
    var bands = faultBands(tl.faults, span);

    // The axis: ticks, fault bands with labels, and an aggregate of the
    // outcomes over time so a scenario with thousands of rows still reads.
    var axis = sv("svg", { "class": "axis", width: width, height: AXIS + 40 }, box);
    var buckets = 120, agg = [];
    for (var b = 0; b < buckets; b++) agg.push([0, 0, 0, 0]);
    var maxAgg = 1;
    rows.forEach(function (d) {
      d.a.forEach(function (m) {
        var k = Math.min(buckets - 1, Math.floor((m[0] / span) * buckets));
        agg[k][m[1]]++;
      });
    });
    agg.forEach(function (a) { maxAgg = Math.max(maxAgg, a[0] + a[1] + a[2] + a[3]); });
    var bw = plotW / buckets;
    agg.forEach(function (a, k) {
      var y = 38;
      for (var o = 0; o < 4; o++) {
        if (!a[o]) continue;
        var hgt = (a[o] / maxAgg) * 34;
        y -= hgt;
        title(sv("rect", { x: GUTTER + k * bw, y: y, width: Math.max(bw - 0.5, 0.5), height: hgt, fill: COLORS[o] }, axis),
          a[o] + " " + OUTCOMES[o] + " near " + fmtMs((k + 0.5) * span / buckets));
      }
    });
    sv("text", { x: 4, y: 24, text: "attempts over time" }, axis);
    var step = niceStep(span, 8);
    for (var t = 0; t <= span; t += step) {
      sv("line", { x1: x(t), x2: x(t), y1: 40, y2: 46, stroke: "#999" }, axis);
      sv("text", { x: x(t) + 2, y: 58, text: fmtMs(t) }, axis);
    }
    sv("text", { x: 4, y: 58, text: rows.length + (r.command === "sink" ? " events" : " deliveries") }, axis);
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
        if (i === focused) sv("rect", { "class": "row-hl", x: 0, y: y - ROW / 2, width: width, height: ROW }, svg);
        var intent = d.intent || "genuine";
        title(sv("text", { x: 4, y: y + 4, text: (d.key + (intent !== "genuine" ? " · " + intent : "")).slice(0, 26) }, svg),
          d.id + " · key " + d.key + " · account " + d.account + " · " + intent + (d.detail ? " (" + d.detail + ")" : ""));
        var firstOfRound = {};
        d.a.forEach(function (m) {
          var f = firstOfRound[m[3]];
          firstOfRound[m[3]] = f === undefined ? m[0] : Math.min(f, m[0]);
        });
        // The envelope: where the profile's schedule puts each retry (a
        // sender's retries carry their own window, from the attempt before).
        var env = tl.envelope || [];
        d.a.forEach(function (m) {
          var n = m[2], base = firstOfRound[m[3]];
          if (m[9]) {
            title(sv("rect", { "class": "window", x: x(m[9][0]), y: y - 5, width: Math.max(x(m[9][1]) - x(m[9][0]), 1), height: 10,
              fill: "#90caf9", opacity: 0.5 }, svg),
              "attempt " + n + " due " + fmtMs(m[9][0]) + "–" + fmtMs(m[9][1]) + " (the schedule's window after attempt " + (n - 1) + ")");
            return;
          }
          if (n < 2 || !env[n - 1]) return;
          var lo = base + env[n - 1][0], hi = base + env[n - 1][1];
          title(sv("rect", { x: x(lo), y: y - 5, width: Math.max(x(hi) - x(lo), 1), height: 10, fill: "#90caf9", opacity: 0.45 }, svg),
            "attempt " + n + " due " + fmtMs(env[n - 1][0]) + "–" + fmtMs(env[n - 1][1]) + " after the first");
        });
        for (var j = 1; j < d.a.length; j++)
          sv("line", { x1: x(d.a[j - 1][0]), x2: x(d.a[j][0]), y1: y, y2: y, stroke: "#bbb" }, svg);
        d.a.forEach(function (m) {
          var tip = "attempt " + m[2] + (m[3] ? " (redelivery " + m[3] + ")" : "") + " at " + fmtMs(m[0]) + " · " +
            OUTCOMES[m[1]] + " · " + (m[4] == null ? "no answer" : "status " + m[4]) +
            (m[6] == null ? "" : " in " + m[6] + " ms") + (m[7] == null ? "" : " · fault " + tl.fault_names[m[7]]) +
            (m[8] ? " · " + m[8] : "") + " · history line " + m[5];
          var mk = m[1] === 3
            ? sv("rect", { "class": "mark", x: x(m[0]) - 4, y: y - 4, width: 8, height: 8, fill: COLORS[3] }, svg)
            : sv("circle", { "class": "mark", cx: x(m[0]), cy: y, r: 4, fill: COLORS[m[1]],
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
