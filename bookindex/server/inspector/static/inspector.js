// bookindex inspector: lazy section tree, node view, page viewer with boxes, citations.
// Vanilla JS; the graph page alone loads cytoscape.js (static/vendor, MIT). Every string from
// the server is set with textContent, never parsed as HTML. Timing marks for scripts/bench_inspector.py go to window.inspectorMarks.
"use strict";

(function () {
  const body = document.body;
  const PREFIX = body.dataset.prefix || "/ui";
  const DPI = Number(body.dataset.dpi || 110);
  const API = body.dataset.api || "";
  const marks = (window.inspectorMarks = {});

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "class") e.className = v;
      else if (k.startsWith("data-") || k.startsWith("aria-") || k === "role" || k === "type" || k === "href" ||
               k === "tabindex" || k === "alt" || k === "title" || k === "hidden") e.setAttribute(k, v === true ? "" : v);
      else e[k] = v;
    }
    for (const kid of kids) if (kid) e.append(kid);
    return e;
  }

  function readJSON(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  async function getJSON(url) {
    const r = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!r.ok) {
      let detail = r.statusText;
      try { detail = (await r.json()).detail || detail; } catch (e) { /* not JSON */ }
      throw new Error(`${r.status}: ${detail}`);
    }
    return r.json();
  }

  function pageLabel(labels, page) {
    if (labels && page >= 1 && page <= labels.length && labels[page - 1] && labels[page - 1] !== String(page)) return labels[page - 1];
    return "";
  }

  function addBoxes(frame, size, boxes) {
    const [w, h] = size || [612, 792];
    for (const old of frame.querySelectorAll(".box")) old.remove();
    for (const b of boxes) {
      const [x0, y0, x1, y1] = b.bbox;
      const box = el("div", {
        class: `box rank-${Math.min(b.rank || 1, 10)} ${b.role || ""}${b.current ? " current" : ""}`,
        "data-rank": b.rank || "", "data-role": b.role || "", "data-node": b.node || "",
        title: b.rank ? `evidence ${b.rank} (${b.role})` : b.role,
      });
      box.style.left = `${(x0 / w) * 100}%`;
      box.style.top = `${(y0 / h) * 100}%`;
      box.style.width = `${((x1 - x0) / w) * 100}%`;
      box.style.height = `${((y1 - y0) / h) * 100}%`;
      frame.append(box);
    }
  }

  // -- page viewer: an image of one page with boxes positioned in % of the page size ---------
  // boxes: [{bbox:[x0,y0,x1,y1] in PDF points, rank, role, current}]
  function pageFigure(doc, page, size, boxes, labels, caption) {
    const [w, h] = size || [612, 792];
    const fig = el("figure", { class: "page", "data-page": page });
    const frame = el("div", { class: "page-frame" });
    const img = el("img", { alt: `Page ${page}`, "data-page": page, decoding: "async" });
    img.addEventListener("load", () => {
      img.dataset.loaded = "1";
      marks.pageLoaded = performance.now();
    });
    img.src = `${API}/documents/${encodeURIComponent(doc)}/pages/${page}.png?dpi=${DPI}`;
    frame.append(img);
    addBoxes(frame, [w, h], boxes);
    fig.append(frame);
    const label = pageLabel(labels, page);
    fig.append(el("figcaption", { text: `${caption ? caption + " · " : ""}page ${page}${label ? ` (printed ${label})` : ""}` }));
    return fig;
  }

  // -- document page --------------------------------------------------------------------------
  function initDocument() {
    const data = readJSON("doc-data");
    if (!data) return;
    const treeEl = document.getElementById("tree");
    const viewer = document.getElementById("viewer");
    const pager = document.getElementById("pager");
    const pageNo = document.getElementById("page-no");
    const pageLabelEl = document.getElementById("page-label");
    const nodeEl = document.getElementById("node");
    let current = { page: 1, boxes: [] };

    function row(r) {
      const li = el("li", { role: "treeitem", "data-id": r.id, "aria-selected": "false", "data-group": r.group });
      const line = el("div", { class: "tree-row" });
      if (r.children > 0) {
        const tw = el("button", { type: "button", class: "twisty", "aria-expanded": "false",
          "aria-label": `Expand ${r.label}`, text: "▸" });
        tw.addEventListener("click", () => toggle(li, tw, r));
        line.append(tw);
        li.setAttribute("aria-expanded", "false");
      } else {
        line.append(el("span", { class: "twisty-space" }));
      }
      const open = el("button", { type: "button", class: r.group ? "node-link group-link" : "node-link", "data-id": r.id });
      if (r.group) open.append(el("span", { class: "label", text: r.label }));
      else open.append(el("span", { class: `badge t-${r.type}`, text: r.role || r.type }), " ", el("span", { class: "label", text: r.label }));
      if (r.entry && r.entry !== r.label) open.append(" ", el("span", { class: "entry", text: r.entry }));
      const pages = r.page_ref || (r.page === r.page_end ? `p. ${r.page}` : `pp. ${r.page}–${r.page_end}`);
      open.append(" ", el("span", { class: "muted pages", text: pages }));
      if (r.children) open.append(" ", el("span", { class: "muted count", text: r.group ? `(${r.children} nodes)` : `(${r.children})` }));
      if (r.group) open.addEventListener("click", () => line.querySelector(".twisty").click());  // a fold opens, it is no node
      else open.addEventListener("click", () => showNode(r.id, r.page));
      line.append(open);
      li.append(line);
      return li;
    }

    function fill(ul, rows) {
      const frag = document.createDocumentFragment();
      for (const r of rows) frag.append(row(r));
      ul.append(frag);
    }

    async function toggle(li, tw, r) {
      const expanded = tw.getAttribute("aria-expanded") === "true";
      let ul = li.querySelector(":scope > ul");
      if (expanded) {
        tw.setAttribute("aria-expanded", "false"); li.setAttribute("aria-expanded", "false");
        tw.textContent = "▸"; if (ul) ul.hidden = true; return;
      }
      if (!ul) {
        ul = el("ul", { role: "group" });
        li.append(ul);
        tw.disabled = true;
        try {
          const doc = encodeURIComponent(data.doc);
          fill(ul, await getJSON(r.group ? `${PREFIX}/api/documents/${doc}/matter/${encodeURIComponent(r.group)}`
            : `${PREFIX}/api/documents/${doc}/children/${encodeURIComponent(r.id)}`));
        } catch (e) {
          ul.append(el("li", { class: "error", text: String(e.message || e) }));
        }
        tw.disabled = false;
      }
      ul.hidden = false;
      tw.setAttribute("aria-expanded", "true"); li.setAttribute("aria-expanded", "true");
      tw.textContent = "▾";
    }

    function showPage(page) {
      page = Math.max(1, Math.min(data.pages || 1, page));
      current.page = page;
      pageNo.value = page;
      const label = pageLabel(data.labels, page);
      pageLabelEl.textContent = label ? `(printed ${label})` : "";
      if (!data.pdf) { viewer.replaceChildren(el("p", { class: "muted", text: "Page images exist for PDF documents only." })); return; }
      const boxes = current.boxes.filter((b) => b.page === page).map((b) => ({ bbox: b.bbox, rank: 1, role: b.role }));
      const shown = viewer.querySelector(`figure[data-page="${page}"] .page-frame`);
      if (shown) { addBoxes(shown, data.sizes[page - 1], boxes); return; }  // same image: new boxes only
      viewer.replaceChildren(pageFigure(data.doc, page, data.sizes[page - 1], boxes, data.labels));
    }

    async function showNode(id, page) {
      for (const s of treeEl.querySelectorAll('[aria-selected="true"]')) s.setAttribute("aria-selected", "false");
      const li = treeEl.querySelector(`li[data-id="${CSS.escape(id)}"]`);
      if (li) li.setAttribute("aria-selected", "true");
      marks.nodeClicked = performance.now();
      if (page) {  // the row knows the node's first page: start loading its image at once
        current.boxes = [];
        pager.hidden = false;
        showPage(page);
      }
      let n;
      try {
        n = await getJSON(`${PREFIX}/api/nodes/${encodeURIComponent(id)}`);
      } catch (e) {
        nodeEl.replaceChildren(el("p", { class: "error", role: "alert", text: String(e.message || e) }));
        return;
      }
      history.replaceState(null, "", `#node=${encodeURIComponent(id)}`);
      const path = el("nav", { class: "crumbs", "aria-label": "Parent path" });
      n.parent_path.forEach((t, i) => {
        if (i) path.append(" › ");
        path.append(el("span", { text: t || "(untitled)" }));
      });
      const head = el("h3", { class: "node-title" }, el("span", { class: `badge t-${n.type}`, text: n.type }), " ",
        el("span", { text: n.title || n.label }));
      const pages = n.page_idx === n.page_end_idx ? `page ${n.page_idx + 1}` : `pages ${n.page_idx + 1}–${n.page_end_idx + 1}`;
      const facts = el("p", { class: "muted", text: `${pages} · level ${n.level} · ${n.children.length} children${n.entry ? " · entry " + n.entry : ""} · ${n.id}` });
      const text = el("pre", { class: "node-text", text: n.text || "" });
      nodeEl.replaceChildren(path, head, facts);
      if (n.text) nodeEl.append(text);
      current.boxes = n.boxes;
      pager.hidden = false;
      showPage(n.page_idx + 1);
      const pagesWithBoxes = [...new Set(n.boxes.map((b) => b.page))];
      if (pagesWithBoxes.length > 1) {
        const jump = el("p", { class: "jump" }, "Boxes on pages: ");
        for (const p of pagesWithBoxes) {
          const b = el("button", { type: "button", class: "link", text: String(p) });
          b.addEventListener("click", () => showPage(p));
          jump.append(b, " ");
        }
        nodeEl.append(jump);
      }
    }

    document.getElementById("prev-page").addEventListener("click", () => showPage(current.page - 1));
    document.getElementById("next-page").addEventListener("click", () => showPage(current.page + 1));
    pageNo.addEventListener("change", () => showPage(Number(pageNo.value) || 1));

    // keyboard: arrows move between visible rows, right/left expand/collapse
    treeEl.addEventListener("keydown", (ev) => {
      const t = ev.target;
      if (!(t instanceof HTMLElement) || !t.classList.contains("node-link")) return;
      const links = [...treeEl.querySelectorAll(".node-link")].filter((x) => x.offsetParent !== null);
      const i = links.indexOf(t);
      const li = t.closest("li");
      const tw = li && li.querySelector(":scope > .tree-row > .twisty");
      if (ev.key === "ArrowDown" && i + 1 < links.length) { links[i + 1].focus(); ev.preventDefault(); }
      else if (ev.key === "ArrowUp" && i > 0) { links[i - 1].focus(); ev.preventDefault(); }
      else if (ev.key === "ArrowRight" && tw && tw.getAttribute("aria-expanded") !== "true") { tw.click(); ev.preventDefault(); }
      else if (ev.key === "ArrowLeft" && tw && tw.getAttribute("aria-expanded") === "true") { tw.click(); ev.preventDefault(); }
    });

    const rootUl = treeEl;
    fill(rootUl, data.rows);
    marks.treeShown = performance.now();
    treeEl.dataset.ready = "1";
    const m = /node=([^&]+)/.exec(location.hash);
    if (m) showNode(decodeURIComponent(m[1]));
  }

  // -- ask page: citations open the cited node's pages with every evidence box ---------------
  function initAsk() {
    const data = readJSON("ask-data");
    if (!data) return;
    const viewer = document.getElementById("cite-viewer");

    function show(n) {
      const ev = data.evidence[n - 1];
      if (!ev) return;
      viewer.replaceChildren();
      viewer.dataset.n = String(n);
      const head = el("p", { class: "cite-head" }, el("strong", { text: `[${n}]` }), ` evidence ${n} of ${data.evidence.length}`);
      const close = el("button", { type: "button", class: "link", text: "close" });
      close.addEventListener("click", () => { viewer.replaceChildren(); delete viewer.dataset.n; });
      head.append(" · ", close);
      viewer.append(head);
      if (!data.pdf) { viewer.append(el("p", { class: "muted", text: "Page images exist for PDF documents only." })); return; }
      const row = el("div", { class: "page-row" });
      for (const page of ev.pages) {
        const boxes = [];
        for (const other of data.evidence) {
          for (const b of other.boxes) {
            if (b.page === page) boxes.push({ bbox: b.bbox, rank: other.rank, role: b.role, node: other.node_id, current: other === ev });
          }
        }
        row.append(pageFigure(data.doc, page, data.sizes[page - 1], boxes, data.labels, `evidence ${n}`));
      }
      viewer.append(row);
      viewer.scrollIntoView({ block: "nearest" });
    }

    for (const b of document.querySelectorAll(".cite, .cite-row")) {
      b.addEventListener("click", () => show(Number(b.dataset.n)));
    }
  }

  // -- graph page: an entity's neighbourhood drawn with cytoscape.js (shipped in static/vendor) --
  function initGraph() {
    const data = readJSON("graph-data");
    const box = document.getElementById("graph-canvas");
    if (!data || !box) return;
    if (typeof window.cytoscape !== "function") {
      box.replaceChildren(el("p", { class: "muted", text: "The drawing needs cytoscape.js, which did not load; the lists show the neighbourhood." }));
      return;
    }
    const maxDeg = Math.max(1, ...data.nodes.map((n) => n.degree || 0));
    const maxW = Math.max(1, ...data.edges.map((e) => e.weight || 0));
    // Rings: the centre, its INNER heaviest neighbours, then the rest (data.nodes is heaviest first).
    const INNER = 8;
    const elements = [
      ...data.nodes.map((n, i) => ({ group: "nodes", data: { id: n.id, name: n.name, type: n.type,
        size: 18 + 26 * Math.sqrt((n.degree || 0) / maxDeg), ring: n.center ? 3 : i <= INNER ? 2 : 1 },
        classes: n.center ? "center" : "" })),
      ...data.edges.map((e, i) => ({ group: "edges", data: { id: `e${i}`, source: e.source, target: e.target,
        label: e.label, width: 1 + 4 * ((e.weight || 0) / maxW) }, classes: e.spoke ? "spoke" : "link" })),
    ];
    // Labels are cut to LABEL_W pixels (the whole name on hover, and in the list below); the layout
    // spaces the rings by each node's box with its label, plus the diagonal of two such boxes, so
    // no two labels overlap. Relation labels show on hover of either end.
    const LABEL_W = 84;
    const cy = window.cytoscape({
      container: box, elements, minZoom: 0.2, maxZoom: 4,
      style: [
        { selector: "node", style: { label: "data(name)", width: "data(size)", height: "data(size)", "background-color": "#1b98e0",
          color: "#1d2330", "font-size": 12, "text-valign": "bottom", "text-margin-y": 3, "text-wrap": "ellipsis",
          "text-max-width": LABEL_W, "text-background-color": "#fbfcfe", "text-background-opacity": 0.85,
          "text-background-padding": 1, "border-width": 1, "border-color": "#fff" } },
        { selector: "node.center", style: { "background-color": "#d7263d", "font-weight": "bold", "font-size": 13 } },
        { selector: "node.hover", style: { "text-wrap": "wrap", "text-max-width": 320, "z-index": 20,
          "text-background-opacity": 1, "text-border-width": 1, "text-border-color": "#d3d9e3", "text-border-opacity": 1 } },
        { selector: "edge", style: { width: "data(width)", "line-color": "#d3d9e3", "curve-style": "bezier", opacity: 0.7 } },
        { selector: "edge.spoke", style: { "line-color": "#8fa3c4" } },
        { selector: "edge.hover", style: { label: "data(label)", "font-size": 10, color: "#1d2330", opacity: 1, "z-index": 19,
          "text-rotation": "autorotate", "text-background-color": "#fbfcfe", "text-background-opacity": 1 } },
        { selector: "node:active, node:selected", style: { "overlay-opacity": 0.15 } },
      ],
      layout: { name: "concentric", concentric: (n) => n.data("ring"), levelWidth: () => 1,
        nodeDimensionsIncludeLabels: true, avoidOverlap: true, minNodeSpacing: Math.ceil(LABEL_W * 0.45),
        animate: false, padding: 12 },
    });
    cy.on("mouseover", "node", (ev) => { ev.target.addClass("hover"); ev.target.connectedEdges().addClass("hover"); });
    cy.on("mouseout", "node", (ev) => { ev.target.removeClass("hover"); ev.target.connectedEdges().removeClass("hover"); });
    cy.on("tap", "node", (ev) => {
      const id = ev.target.id();
      if (id === data.center) return;
      const params = new URLSearchParams(location.search);
      params.set("entity", id);
      location.search = params.toString();
    });
    box.dataset.ready = "1";
    box.dataset.nodes = String(cy.nodes().length);
    box.dataset.edges = String(cy.edges().length);
    window.inspectorGraph = cy;  // the browser tests read the drawing through it
  }

  // Skills: a navigation replayed one step at a time (all steps stay visible without script).
  function initReplay() {
    const steps = Array.from(document.querySelectorAll(".replay .step"));
    const at = document.getElementById("replay-at");
    if (!steps.length || !at) return;
    let shown = 1;
    function draw() {
      steps.forEach((s, i) => { s.hidden = i >= shown; s.classList.toggle("current", i === shown - 1); });
      at.textContent = `step ${shown} of ${steps.length}`;
    }
    document.getElementById("replay-prev").addEventListener("click", () => { shown = Math.max(1, shown - 1); draw(); });
    document.getElementById("replay-next").addEventListener("click", () => { shown = Math.min(steps.length, shown + 1); draw(); });
    document.getElementById("replay-all").addEventListener("click", () => { shown = steps.length; draw(); });
    draw();
  }

  document.addEventListener("DOMContentLoaded", () => {
    marks.domReady = performance.now();
    if (body.dataset.page === "document") initDocument();
    if (body.dataset.page === "ask") initAsk();
    if (body.dataset.page === "skills") initReplay();
    if (body.dataset.page === "graph") initGraph();
  });
})();
