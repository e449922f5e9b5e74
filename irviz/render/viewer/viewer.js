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
    key = key.replace(/^(box:|cluster:|ctl:)+/, "");
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

  function Viewer(root) {
    this.root = root;
    this.svg = root.querySelector(".irviz-canvas svg");
    this.panel = root.querySelector(".irviz-details");
    this.count = root.querySelector(".irviz-count");
    var data = root.querySelector("script.irviz-data");
    this.details = data ? JSON.parse(data.textContent || "{}") : {};
    if (!this.svg) return;
    var vb = this.svg.viewBox.baseVal;
    this.full = {x: vb.x, y: vb.y, w: vb.width || 1, h: vb.height || 1};
    this.svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    this.nodes = [];     // {g, key}
    this.clusters = [];  // {g, cid}
    this.edges = [];     // {g, a, b}
    this.collapsed = {};
    this.hits = [];
    this.hitIndex = -1;
    this.index();
    this.wire();
    this.sizeCanvas();
    this.reset();
  }

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

  // the canvas as tall as the whole graph at full width, between 240px and 75% of the window
  Viewer.prototype.sizeCanvas = function () {
    var w = this.svg.getBoundingClientRect().width;
    if (!w) return;
    var h = Math.max(240, Math.min(w * this.full.h / this.full.w, window.innerHeight * 0.75));
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

  // -- events --------------------------------------------------------------------
  Viewer.prototype.wire = function () {
    var self = this, svg = this.svg, drag = null, moved = false;
    this.root.querySelector(".irviz-toolbar").addEventListener("click", function (e) {
      var b = e.target.closest("button[data-action]");
      if (!b) return;
      var a = b.getAttribute("data-action");
      if (a === "zoom-in") self.zoom(ZOOM);
      else if (a === "zoom-out") self.zoom(1 / ZOOM);
      else if (a === "fit") self.fit();
      else if (a === "reset") self.reset();
    });
    svg.addEventListener("wheel", function (e) {
      e.preventDefault();
      self.zoom(Math.pow(1.0015, -e.deltaY * (e.deltaMode === 1 ? 16 : 1)), e.clientX, e.clientY);
    }, {passive: false});
    svg.addEventListener("pointerdown", function (e) {
      if (e.button !== 0) return;
      drag = {x: e.clientX, y: e.clientY, vx: self.view.x, vy: self.view.y, id: e.pointerId};
      moved = false;
    });
    svg.addEventListener("pointermove", function (e) {
      if (!drag) return;
      var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (!moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!moved) { moved = true; svg.setPointerCapture(drag.id); svg.classList.add("irviz-dragging"); }
      var s = self.view.w / (svg.getBoundingClientRect().width || 1);
      self.setView(drag.vx - dx * s, drag.vy - dy * s, self.view.w);
    });
    function end() { drag = null; svg.classList.remove("irviz-dragging"); }
    svg.addEventListener("pointerup", end);
    svg.addEventListener("pointercancel", end);
    svg.addEventListener("click", function (e) {
      if (moved) { moved = false; return; }  // the end of a drag, not a click
      var c = e.target.closest("g.cluster.irviz-collapsible");
      if (c && e.target.closest("text")) { self.toggle(c.id.slice(14)); return; }
      var g = e.target.closest("g.node");
      if (g) self.select(g);
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
  Viewer.prototype.show = function (key, d, g) {
    var p = this.panel;
    while (p.firstChild) p.removeChild(p.firstChild);
    if (!d) {
      var t = g && g.querySelector("text");
      p.appendChild(el("h3", null, t ? t.textContent : key));
      p.appendChild(el("p", "irviz-hint", "No details for this node."));
      return;
    }
    p.appendChild(el("h3", null, d.label || key));
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
    (d.findings || []).forEach(function (f) {
      var box = el("div", "irviz-finding");
      box.appendChild(el("strong", null, f.code + " " + f.name));
      box.appendChild(el("div", null, f.message));
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
