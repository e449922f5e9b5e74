/* irviz viewer: zoom/pan, search, node details and foldable module clusters for the
   SVG inside every .irviz-viewer. Vanilla JS, no dependencies, no network.
   Model text is only ever shown with textContent. */
(function () {
  "use strict";
  var ZOOM = 1.25;

  function keyOfNode(g) {  // "n4/call/n2", "box:n3/call"; unnamed nodes by their DOT name
    if (g.id && g.id.indexOf("irviz:") === 0) return g.id.slice(6);
    var t = g.querySelector("title");
    return t ? t.textContent.replace(/^ghost:\d+:/, "") : "";
  }
  function inside(key, cid) {  // is a node/cluster key drawn inside container cid?
    key = key.replace(/^(box:|cluster:|ctl:|roll:)+/, "");
    return key.indexOf(cid + "/") === 0;
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function safeUrl(url) {
    try {
      var u = new URL(url, document.baseURI);
      return ["http:", "https:", "file:"].indexOf(u.protocol) >= 0 ? u.href : null;
    } catch (e) { return null; }
  }

  function json(script) { return script ? JSON.parse(script.textContent || "{}") : {}; }

  function Viewer(root) {
    this.root = root;
    this.canvas = root.querySelector(".irviz-canvas");
    this.panel = root.querySelector(".irviz-details");
    this.count = root.querySelector(".irviz-count");
    this.hint = this.panel.firstElementChild && this.panel.firstElementChild.cloneNode(true);
    var svg = root.querySelector(".irviz-canvas svg");
    if (!svg) return;
    var book = root.querySelector("script.irviz-pages");  // module pages (standalone page)
    this.book = book ? json(book) : null;
    this.cache = {"": {svg: svg, details: json(root.querySelector("script.irviz-data"))}};
    this.page = null;
    this.wire();
    if (this.book) this.wirePages();
    else this.open("");
  }

  // -- pages: "" the overview, else a module page from its <template> -------------------
  Viewer.prototype.unpack = function (key) {
    var ts = this.root.querySelectorAll("template.irviz-page");
    for (var i = 0; i < ts.length; i++) {
      if (ts[i].getAttribute("data-page") !== key) continue;
      var c = ts[i].content, svg = c.querySelector("svg");
      if (!svg) return null;
      this.cache[key] = {svg: document.importNode(svg, true), focus: this.book.pages[key].cluster,
                         details: json(c.querySelector("script.irviz-data"))};
      return this.cache[key];
    }
    return null;
  };
  Viewer.prototype.open = function (key) {
    var p = this.cache[key] || this.unpack(key);
    if (!p || this.page === key) return !!p;
    var old = this.cache[this.page === null ? "" : this.page];
    if (this.page !== null) {  // keep the page as it was left: view, folds
      old.view = this.view; old.collapsed = this.collapsed;
      if (this.selected) this.selected.classList.remove("irviz-selected");
    }
    if (old.svg !== p.svg) this.canvas.replaceChild(p.svg, old.svg);
    this.page = key; this.svg = p.svg; this.details = p.details; this.selected = null;
    if (!p.full) {
      var vb = p.svg.viewBox.baseVal;
      p.full = {x: vb.x, y: vb.y, w: vb.width || 1, h: vb.height || 1};
      p.svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    }
    this.full = p.full;
    this.nodes = [];     // {g, key}
    this.clusters = [];  // {g, cid}
    this.edges = [];     // {g, a, b}
    this.collapsed = p.collapsed || {};
    this.index();
    this.sizeCanvas();
    if (p.view) this.setView(p.view.x, p.view.y, p.view.w);
    else if (!this.fitTo(p.focus)) this.firstView();
    var input = this.root.querySelector(".irviz-search");
    this.search(input ? input.value : "");
    this.clear();
    if (this.hint) this.panel.appendChild(this.hint.cloneNode(true));
    return true;
  };

  Viewer.prototype.index = function () {
    var self = this;
    Array.prototype.forEach.call(this.svg.querySelectorAll("g.node"), function (g) {
      self.nodes.push({g: g, key: keyOfNode(g)});
    });
    Array.prototype.forEach.call(this.svg.querySelectorAll("g.cluster"), function (g) {
      var cid = g.id.indexOf("irviz:cluster:") === 0 ? g.id.slice(14) : "";
      if (self.details["cluster:" + cid]) g.classList.add("irviz-collapsible");
      self.clusters.push({g: g, cid: cid});
    });
    Array.prototype.forEach.call(this.svg.querySelectorAll("g.edge"), function (g) {
      var t = g.querySelector("title"), ends = t ? t.textContent.split("->") : [];
      self.edges.push({g: g, a: ends[0] || "", b: ends[1] || ""});
    });
  };

  // the canvas as tall as the whole graph at full width, between 240px and the window's rest
  Viewer.prototype.sizeCanvas = function () {
    var r = this.svg.getBoundingClientRect(), w = r.width, room = window.innerHeight - 12;
    if (!w) return;
    var h = Math.max(240, Math.min(w * this.full.h / this.full.w, room - Math.max(0, r.top)));
    this.svg.style.height = Math.round(h) + "px";
  };

  // -- view box ------------------------------------------------------------------
  Viewer.prototype.aspect = function () {
    var r = this.svg.getBoundingClientRect();
    return r.width > 0 && r.height > 0 ? r.height / r.width : this.full.h / this.full.w;
  };
  Viewer.prototype.setView = function (x, y, w) {
    w = Math.max(this.full.w / 50, Math.min(w, this.full.w * 20));
    this.view = {x: x, y: y, w: w};
    this.svg.setAttribute("viewBox", [x, y, w, w * this.aspect()].join(" "));
  };
  Viewer.prototype.fit = function () {  // fit to width, top of the graph
    this.setView(this.full.x, this.full.y, this.full.w);
  };
  Viewer.prototype.firstView = function () {  // a tall graph at fit-width (its top)
    if (this.full.h / this.full.w > 2.5 * this.aspect()) this.fit(); else this.reset(); };
  Viewer.prototype.reset = function () {  // the whole graph, centred
    var a = this.aspect(), w = Math.max(this.full.w, this.full.h / a);
    this.setView(this.full.x - (w - this.full.w) / 2, this.full.y, w);
  };
  Viewer.prototype.toSvg = function (cx, cy) {
    var r = this.svg.getBoundingClientRect(), s = this.view.w / (r.width || 1);
    return {x: this.view.x + (cx - r.left) * s, y: this.view.y + (cy - r.top) * s};
  };
  Viewer.prototype.zoom = function (factor, cx, cy) {
    var r = this.svg.getBoundingClientRect();
    if (cx === undefined) { cx = r.left + r.width / 2; cy = r.top + r.height / 2; }
    var p = this.toSvg(cx, cy), w = this.view.w / factor, k = w / this.view.w;
    this.setView(p.x - (p.x - this.view.x) * k, p.y - (p.y - this.view.y) * k, w);
  };
  Viewer.prototype.centerOn = function (g) {
    var b = g.getBBox(), m = g.getCTM(), root = this.svg.getCTM();
    if (!m || !root) return;
    var pt = this.svg.createSVGPoint();
    pt.x = b.x + b.width / 2; pt.y = b.y + b.height / 2;
    pt = pt.matrixTransform(root.inverse().multiply(m));  // into viewBox units
    var w = this.view.w, h = w * this.aspect();
    this.setView(pt.x - w / 2, pt.y - h / 2, w);
  };

  Viewer.prototype.fitTo = function (key) {  // zoom to the cluster of a module page's module
    var g = null;
    this.clusters.forEach(function (c) { if (!g && key && "cluster:" + c.cid === key) g = c.g; });
    var m = g && g.getCTM(), root = this.svg.getCTM();
    if (!m || !root) return false;
    var b = g.getBBox(), t = root.inverse().multiply(m), a = this.svg.createSVGPoint(), z;
    a.x = b.x; a.y = b.y; z = this.svg.createSVGPoint(); z.x = b.x + b.width; z.y = b.y + b.height;
    a = a.matrixTransform(t); z = z.matrixTransform(t);
    var w = Math.max(z.x - a.x, (z.y - a.y) / this.aspect(), this.svg.getBoundingClientRect().width / 1.4) * 1.04;
    this.setView((a.x + z.x - w) / 2, a.y - w * 0.02, w);
    return true;
  };

  // -- events --------------------------------------------------------------------
  Viewer.prototype.showSide = function (side, button) {  // irviz diff: left, right or both
    this.root.setAttribute("data-diff", side);
    button.parentNode.querySelectorAll("button").forEach(function (b) { b.setAttribute("aria-pressed", String(b === button)); });
  };

  Viewer.prototype.wire = function () {  // on the canvas: the svg in it changes with the page
    var self = this, canvas = this.canvas, drag = null, moved = false;
    this.root.querySelector(".irviz-toolbar").addEventListener("click", function (e) {
      var b = e.target.closest("button[data-action]");
      if (!b) return;
      var a = b.getAttribute("data-action");
      if (a === "zoom-in") self.zoom(ZOOM);
      else if (a === "zoom-out") self.zoom(1 / ZOOM);
      else if (a === "fit") self.fit();
      else if (a === "reset") self.reset();
      else if (a.indexOf("diff-") === 0) self.showSide(a.slice(5), b);
    });
    var menu = this.root.querySelector(".irviz-overlay");
    if (menu) menu.addEventListener("change", function () { self.overlay(menu.value); });
    canvas.addEventListener("wheel", function (e) {
      e.preventDefault();
      self.zoom(Math.pow(1.0015, -e.deltaY * (e.deltaMode === 1 ? 16 : 1)), e.clientX, e.clientY);
    }, {passive: false});
    canvas.addEventListener("pointerdown", function (e) {
      if (e.button !== 0) return;
      drag = {x: e.clientX, y: e.clientY, vx: self.view.x, vy: self.view.y, id: e.pointerId};
      moved = false;
    });
    canvas.addEventListener("pointermove", function (e) {
      if (!drag) return;
      var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (!moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!moved) { moved = true; canvas.setPointerCapture(drag.id); self.svg.classList.add("irviz-dragging"); }
      var s = self.view.w / (self.svg.getBoundingClientRect().width || 1);
      self.setView(drag.vx - dx * s, drag.vy - dy * s, self.view.w);
    });
    function end() { drag = null; self.svg.classList.remove("irviz-dragging"); }
    canvas.addEventListener("pointerup", end);
    canvas.addEventListener("pointercancel", end);
    canvas.addEventListener("click", function (e) {
      if (moved) { moved = false; return; }  // the end of a drag, not a click
      var c = e.target.closest("g.cluster.irviz-collapsible");
      if (c && e.target.closest("text")) { self.toggle(c.id.slice(14)); return; }
      var g = e.target.closest("g.node");
      if (g) self.select(g);
    });
    canvas.addEventListener("dblclick", function (e) {  // a module box: open its page
      var g = e.target.closest("g.node"), d = g && self.details[keyOfNode(g)];
      if (d && keyOfNode(g).indexOf("box:") === 0 && self.pageOf(d.module)) self.go(d.module);
    });
    var input = this.root.querySelector(".irviz-search");
    if (input) {
      input.addEventListener("input", function () { self.search(input.value); });
      input.addEventListener("keydown", function (e) {
        if (e.key === "Enter" && self.hits.length) {
          e.preventDefault();
          self.hitIndex = (self.hitIndex + 1) % self.hits.length;
          self.centerOn(self.hits[self.hitIndex]);
          self.select(self.hits[self.hitIndex]);
        } else if (e.key === "Escape") { input.value = ""; self.search(""); }
      });
    }
    window.addEventListener("resize", function () { self.setView(self.view.x, self.view.y, self.view.w); });
  };

  // -- module pages: #module=PATH in the URL, so back/forward and reload work ----------
  Viewer.prototype.pageOf = function (module) {
    var m = this.book && module ? this.book.modules[module] : null;
    return m && m.page ? m : null;
  };
  Viewer.prototype.go = function (module) {
    location.hash = module ? "module=" + encodeURIComponent(module) : "";
  };
  Viewer.prototype.wirePages = function () {
    var self = this, bar = el("nav", "irviz-crumbs"), keys = Object.keys(this.book.pages);
    bar.setAttribute("aria-label", "Pages");
    this.crumbs = el("span", "irviz-trail");
    bar.appendChild(this.crumbs);
    var index = el("details", "irviz-index"), list = el("ol");
    index.appendChild(el("summary", null, keys.length + " module page" + (keys.length === 1 ? "" : "s")));
    keys.forEach(function (k) {
      var p = self.book.pages[k], li = el("li"), a = el("a", null, p.module);
      a.href = "#module=" + encodeURIComponent(p.module);
      li.appendChild(a);
      li.appendChild(el("span", "irviz-hint", " " + p["class"] + ", " + p.ops + " ops" +
                        (p.same.length ? ", same as " + p.same.length + " more" : "")));
      list.appendChild(li);
    });
    index.appendChild(list);
    bar.appendChild(index);
    index.addEventListener("click", function (e) { if (e.target.closest("a")) index.open = false; });
    this.root.insertBefore(bar, this.root.querySelector(".irviz-body"));
    window.addEventListener("hashchange", function () { self.route(); });
    this.route();
  };
  Viewer.prototype.route = function () {
    var h = location.hash.replace(/^#/, ""), module = null, m;
    if (h.indexOf("module=") === 0) {
      try { module = decodeURIComponent(h.slice(7)); } catch (e) { module = h.slice(7); }
    }
    m = this.pageOf(module);
    if (!m || !this.open(m.page)) { this.open(""); m = null; }
    var c = this.crumbs;
    while (c.firstChild) c.removeChild(c.firstChild);
    var home = el(m ? "a" : "strong", null, "overview");
    if (m) home.href = "#";
    c.appendChild(home);
    if (!m && module === null) return;
    var parts = module.split("."), i, up;
    for (i = 1; i <= parts.length; i++) {  // the enclosing modules that have pages, then it
      up = parts.slice(0, i).join(".");
      if (i < parts.length && !this.pageOf(up)) continue;
      c.appendChild(el("span", "irviz-sep", " › "));
      var a = c.appendChild(el(i < parts.length ? "a" : "strong", null, up));
      if (i < parts.length) a.href = "#module=" + encodeURIComponent(up);
    }
    var same = m && m.same_as, note = !m ? (this.book.modules[module] || {}).note || "no page for this module" :
      same ? "same structure as " + same + ", whose page is shown" : "";
    if (note) c.appendChild(el("span", "irviz-note", note));
  };

  // -- overlay: colour the nodes by measured time, estimated cost or memory -----------
  var RAMP = ["#ffffd4", "#fee391", "#fec44f", "#fe9929", "#ec7014"];  // ColorBrewer YlOrBr
  function fmtMetric(metric, v, unit) {
    function three(x) { return Number(x.toPrecision(3)).toString(); }
    if (metric === "bytes") {
      var units = [["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];
      for (var i = 0; i < units.length; i++) if (v >= units[i][1]) return three(v / units[i][1]) + " " + units[i][0];
      return v + " B";
    }
    if (metric === "cost" && unit !== "us") return three(v) + " ops";
    return v >= 1000 ? three(v / 1000) + " ms" : three(v) + " µs";
  }
  Viewer.prototype.overlay = function (metric) {
    var self = this, lo = Infinity, hi = 0;
    var menu = this.root.querySelector(".irviz-overlay");
    var unit = menu ? menu.getAttribute("data-cost-unit") : "ops";
    function value(n) {
      var d = self.details[n.key];
      return metric && d && d.metrics ? d.metrics[metric] || 0 : 0;
    }
    this.nodes.forEach(function (n) {
      var v = value(n);
      if (v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    });
    this.root.setAttribute("data-overlay", metric || "");
    this.nodes.forEach(function (n) {
      var v = value(n), colour = null;
      if (metric) {
        var x = hi > lo ? (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo)) : 0.5;  // all equal: the middle
        colour = v > 0 ? RAMP[Math.min(Math.floor(x * RAMP.length), RAMP.length - 1)] : "#f2f2f2";
      }
      Array.prototype.forEach.call(n.g.querySelectorAll("polygon, ellipse, path"), function (shape) {
        if (!shape.hasAttribute("data-irviz-fill")) shape.setAttribute("data-irviz-fill", shape.getAttribute("fill") || "");
        var original = shape.getAttribute("data-irviz-fill");
        if (!original || original === "none" || original === "transparent") return;
        shape.setAttribute("fill", colour || original);
      });
      n.g.classList.toggle("irviz-overlaid", !!metric);
    });
    var legend = this.root.querySelector(".irviz-overlay-legend");
    if (!legend) {
      legend = el("span", "irviz-overlay-legend");
      if (menu) menu.parentNode.insertBefore(legend, menu.nextSibling);
    }
    legend.textContent = metric && hi > 0
      ? fmtMetric(metric, lo, unit) + " … " + fmtMetric(metric, hi, unit) + " (log scale; grey: none)"
      : "";
  };

  // -- search --------------------------------------------------------------------
  Viewer.prototype.search = function (q) {
    var self = this;
    q = q.trim().toLowerCase();
    this.hits = [];
    this.hitIndex = -1;
    this.nodes.forEach(function (n) {
      var d = self.details[n.key], hit = false;
      if (q) {
        var text = [n.key, d && d.label, d && d.kind, d && d.source, d && d.scope,
                    d && d.contains && d.contains.join(" ")];
        if (!d) { var t = n.g.querySelector("text"); text.push(t && t.textContent); }
        hit = text.join("\n").toLowerCase().indexOf(q) >= 0;
      }
      n.g.classList.toggle("irviz-hit", hit);
      if (hit) self.hits.push(n.g);
    });
    this.svg.classList.toggle("irviz-searching", !!q);
    this.count.textContent = q ? this.hits.length + (this.hits.length === 1 ? " match" : " matches") : "";
  };

  // -- details -------------------------------------------------------------------
  Viewer.prototype.select = function (g) {
    if (this.selected) this.selected.classList.remove("irviz-selected");
    this.selected = g;
    g.classList.add("irviz-selected");
    var key = keyOfNode(g), d = this.details[key];
    this.show(key, d, g);
  };
  Viewer.prototype.clear = function () {
    while (this.panel.firstChild) this.panel.removeChild(this.panel.firstChild);
  };
  Viewer.prototype.show = function (key, d, g) {
    var p = this.panel, self = this;
    this.clear();
    if (!d) {
      var t = g && g.querySelector("text");
      p.appendChild(el("h3", null, t ? t.textContent : key));
      p.appendChild(el("p", "irviz-hint", "No details for this node."));
      return;
    }
    p.appendChild(el("h3", null, d.label || key));
    var mod = this.book && key.indexOf("box:") === 0 && d.module ? this.book.modules[d.module] : null;
    if (mod && mod.page) {
      var open = el("button", "irviz-open", "Open module page");
      open.type = "button";
      open.addEventListener("click", function () { self.go(d.module); });
      p.appendChild(open);
    } else if (mod && mod.note) p.appendChild(el("p", "irviz-hint", mod.note));
    var dl = el("dl");
    function row(name, value) {
      if (value === null || value === undefined || value === "" ||
          (Array.isArray(value) && !value.length)) return;
      dl.appendChild(el("dt", null, name));
      var dd = el("dd");
      if (value instanceof Node) dd.appendChild(value);
      else if (Array.isArray(value)) value.forEach(function (v) { dd.appendChild(el("div", null, v)); });
      else dd.textContent = String(value);
      dl.appendChild(dd);
    }
    row("kind", d.kind);
    if (d.call) row("call", d.call + (d.module ? " of " + d.module + "." + (d.method || "forward") + "()" : ""));
    if (d.frozen) row("warning", d.frozen);
    if (d.type) row("type", d.type);
    if (d.ops !== undefined) row("operations", d.ops);
    row("outputs", d.outputs);
    row("scope", d.scope ? d.scope + (d.scope_class ? " (" + d.scope_class + ")" : "") :
        (d.scope_class ? "<root> (" + d.scope_class + ")" : null));
    if (d.source) {
      var src = el("span"), url = d.url && safeUrl(d.url);
      var loc = url ? el("a", "irviz-source", d.source) : el("code", "irviz-source", d.source);
      if (url) { loc.href = url; loc.rel = "noopener"; }
      src.appendChild(loc);
      if (d.code) src.appendChild(el("code", "irviz-code", d.code));
      row(d.ops !== undefined ? "called at" : "source", src);
    }
    if (d.critical) row("critical path", "yes");
    if (d.checks) row("checks before it", d.checks);
    (d.findings || []).forEach(function (f) {
      // errors and warnings in the warning colour, info findings (no counterexample,
      // no certainty) in the neutral one
      var info = f.severity === "info";
      var box = el("div", "irviz-finding" + (info ? " irviz-finding-info" : ""));
      box.appendChild(el("strong", null, f.code + " " + f.name));
      box.appendChild(el("div", null, f.message));
      if (f.evidence) box.appendChild(el("div", "irviz-evidence", f.evidence));
      if (f.remedy) box.appendChild(el("div", "irviz-evidence", f.remedy));
      if (f.hint) box.appendChild(el("div", "irviz-hint", f.hint));
      row(f.severity || "finding", box);
    });
    var fk = d.fork;
    if (fk) {
      var lines = [];
      if (fk.callee) lines.push("callee: " + fk.callee);
      if (fk.instances !== undefined && fk.instances !== null) lines.push("tasks: " + fk.instances);
      if (fk.waits) lines.push("waited at: " + (fk.waits.join(", ") || "never"));
      if (fk.waits_for) lines.push("waits for forks at: " + fk.waits_for.join(", "));
      if (fk.task_of) lines.push("runs in the task forked at " + fk.task_of);
      if (fk.task_cost !== undefined && fk.task_cost !== null) lines.push("task cost: " + fk.task_cost + " µs");
      if (fk.overlap_cost !== undefined && fk.overlap_cost !== null) lines.push("work beside it: " + fk.overlap_cost + " µs");
      if (fk.same_iteration) lines.push("waited in the same loop iteration");
      row("fork", lines);
    }
    p.appendChild(dl);
  };

  // -- folding module clusters ---------------------------------------------------
  Viewer.prototype.toggle = function (cid) {
    if (this.collapsed[cid]) delete this.collapsed[cid];
    else this.collapsed[cid] = true;
    var cids = Object.keys(this.collapsed), hidden = {};
    function isHidden(key) {
      for (var i = 0; i < cids.length; i++) if (inside(key, cids[i])) return true;
      return false;
    }
    this.nodes.forEach(function (n) {
      var h = isHidden(n.key);
      if (h) hidden[n.key] = true;
      n.g.classList.toggle("irviz-hidden", h);
    });
    this.clusters.forEach(function (c) {
      c.g.classList.toggle("irviz-hidden", !!c.cid && isHidden("cluster:" + c.cid));
      c.g.classList.toggle("irviz-collapsed", !!this.collapsed[c.cid]);
    }, this);
    this.edges.forEach(function (e) {
      e.g.classList.toggle("irviz-hidden", isHidden(e.a) || isHidden(e.b));
    });
  };

  function initAll() {
    Array.prototype.forEach.call(document.querySelectorAll(".irviz-viewer"), function (root) {
      if (root.getAttribute("data-irviz-ready")) return;
      root.setAttribute("data-irviz-ready", "1");
      try { root.irvizViewer = new Viewer(root); }
      catch (e) { if (window.console) console.warn("irviz viewer:", e); }
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initAll);
  else initAll();
})();
