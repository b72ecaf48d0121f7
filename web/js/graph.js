// Graph: the knowledge graph of documents, topics and entities drawn by Cytoscape.js (vendored at
// setup); selecting a node lists what it connects, with links through to related documents.
import cytoscape from "/vendor/cytoscape.esm.min.mjs";
import { call } from "./api.js";
import { clear, docHref, el, errorBox, loadInto, spinner } from "./ui.js";

const LIMIT = 400;
const QUERIES = {
  documents: "MATCH (d:Document) RETURN d.id AS doc, d.title AS title, d.file_type AS file_type LIMIT $n",
  topics: "MATCH (d:Document)-[r:COVERS]->(t:Topic) RETURN d.id AS doc, t.key AS key, t.name AS name, r.weight AS weight LIMIT $n",
  entities: "MATCH (d:Document)-[m:MENTIONS]->(e:Entity) RETURN d.id AS doc, e.key AS key, e.name AS name, e.type AS type, m.count AS count LIMIT $n",
};

async function query(cypher) {
  const r = await call("/v1/graph/query", { body: { cypher, params: { n: LIMIT }, limit: LIMIT } });
  return { rows: r.rows || [], truncated: !!r.truncated };
}

/** Cytoscape elements from the three query results. One node per topic or entity key: a name shared by
 *  several documents links them. `shared`: only the topics and entities of two documents or more (what connects
 *  the library); `type`: only entities of that label; `minMentions`: only entities mentioned that often. */
export function elements(docs, topics, entities, { showTopics = true, showEntities = true, shared = false, type = "", minMentions = 1 } = {}) {
  const out = [];
  for (const d of docs) out.push({ data: { id: `d:${d.doc}`, label: d.title || d.doc, kind: "document", doc: d.doc } });
  const known = new Set(docs.map((d) => d.doc));
  const add = (rows, kind, weightOf, keep) => {
    const documentsOf = new Map();
    const mentions = new Map();
    for (const r of rows) {
      if (!known.has(r.doc) || !keep(r)) continue;
      const id = `${kind[0]}:${r.key}`;
      if (!documentsOf.has(id)) documentsOf.set(id, new Set());
      documentsOf.get(id).add(r.doc);
      mentions.set(id, (mentions.get(id) || 0) + Number(r.count || 1));
    }
    const seen = new Set();
    for (const r of rows) {
      const id = `${kind[0]}:${r.key}`;
      const docsHere = documentsOf.get(id);
      if (!docsHere || (shared && docsHere.size < 2) || (kind === "entity" && mentions.get(id) < minMentions)) continue;
      if (!seen.has(id)) {
        seen.add(id);
        out.push({ data: { id, label: r.name, kind, type: r.type || "", documents: docsHere.size } });
      }
      out.push({ data: { id: `${id}<${r.doc}`, source: `d:${r.doc}`, target: id, weight: weightOf(r) } });
    }
  };
  if (showTopics) add(topics, "topic", (r) => Number(r.weight || 0), () => true);
  if (showEntities) add(entities, "entity", (r) => Number(r.count || 1), (r) => !type || r.type === type);
  return out;
}

// Cluster colours (the documents that share most, with what they share): distinct in light and dark.
const CLUSTER_COLOURS = ["#2563eb", "#16a34a", "#ea580c", "#9333ea", "#0891b2", "#db2777", "#65a30d", "#b45309"];
/** Above this many nodes a graph starts with only what links documents, and labels show when zoomed in. */
const LARGE = 150;

const STYLE = [
  { selector: "node", style: { label: "data(label)", "font-size": 10, "text-wrap": "ellipsis", "text-max-width": 120, "text-valign": "bottom", "text-margin-y": 4,
    color: "#1f2933", "text-background-color": "#ffffff", "text-background-opacity": 0.7, "text-background-padding": 1, "min-zoomed-font-size": 7 } },
  { selector: "node[kind = 'document']", style: { shape: "round-rectangle", "background-color": "#2563eb", width: 28, height: 20, "font-weight": "bold" } },
  { selector: "node[kind = 'topic']", style: { shape: "ellipse", "background-color": "#16a34a", width: 16, height: 16 } },
  { selector: "node[kind = 'entity']", style: { shape: "diamond", "background-color": "#ea580c", width: 16, height: 16 } },
  { selector: "edge", style: { width: 1.2, "line-color": "#cbd5e1", "curve-style": "haystack" } },
  { selector: "node[cluster]", style: { "border-width": 2, "border-color": "data(cluster)" } },
  { selector: "node[kind = 'document'][cluster]", style: { "background-color": "data(cluster)" } },
  { selector: ":selected", style: { "border-width": 3, "border-color": "#f59e0b" } },
  { selector: ".faded", style: { opacity: 0.15 } },
];

export function render(main) {
  const state = { alive: true, cy: null, data: null };
  const stats = el("p", { class: "muted" }, spinner("Loading graph statistics"));
  const canvas = el("div", { class: "graph-canvas", "data-testid": "graph", role: "img", "aria-label": "Knowledge graph of documents, topics and entities" });
  const side = el("aside", { class: "card graph-side", "aria-live": "polite" }, el("p", { class: "muted" }, "Select a node (click it, or pick it from the list below) to see what it connects."));
  const nodeList = el("ul", { class: "node-list", "aria-label": "Nodes" });
  const showTopics = el("input", { type: "checkbox", id: "show-topics", checked: true });
  const showEntities = el("input", { type: "checkbox", id: "show-entities", checked: true });
  const sharedOnly = el("input", { type: "checkbox", id: "shared-only" });
  const typeFilter = el("select", { id: "entity-type" }, el("option", { value: "" }, "every kind"));
  const minMentions = el("input", { type: "number", id: "min-mentions", min: "1", max: "50", value: "1", class: "narrow" });
  const find = el("input", { type: "search", id: "graph-find", placeholder: "Find a node" });
  const message = el("div");

  clear(main, el("h1", {}, "Graph"), stats,
    el("div", { class: "toolbar graph-filters" },
      el("span", {}, showTopics, el("label", { for: "show-topics" }, " Topics")),
      el("span", {}, showEntities, el("label", { for: "show-entities" }, " Entities")),
      el("span", {}, sharedOnly, el("label", { for: "shared-only" }, " Only what links two documents or more")),
      el("label", {}, "Entity kind ", typeFilter),
      el("label", {}, "Mentioned at least ", minMentions, " times"),
      el("label", { class: "visually-hidden", for: "graph-find" }, "Find a node"), find,
      el("span", { class: "legend" }, el("i", { class: "key doc" }), "document ", el("i", { class: "key topic" }), "topic ", el("i", { class: "key entity" }), "entity · colours: clusters")),
    message,
    el("div", { class: "graph-grid" }, el("div", { class: "card" }, canvas), side),
    el("details", { class: "card" }, el("summary", {}, "All nodes, as a list"), nodeList));

  call("/v1/graph/stats").then((s) => {
    clear(stats, `${s.documents} documents, ${s.topics} topics, ${s.entities} entities, ${s.covers_edges} topic links, ${s.mentions_edges} mentions · backend ${s.backend}`);
  }).catch((error) => clear(stats, errorBox(error)));

  Promise.all([query(QUERIES.documents), query(QUERIES.topics), query(QUERIES.entities)]).then(([d, t, e]) => {
    if (!state.alive) return;
    state.data = { docs: d.rows, topics: t.rows, entities: e.rows };
    if (d.truncated || t.truncated || e.truncated) message.append(el("p", { class: "muted" }, `Only the first ${LIMIT} rows of each kind are drawn.`));
    const types = [...new Set(e.rows.map((r) => r.type).filter(Boolean))].sort();
    typeFilter.append(...types.map((t) => el("option", { value: t }, t)));
    // A large library starts with what connects its documents; the rest is one checkbox away.
    sharedOnly.checked = elements(d.rows, t.rows, e.rows).filter((x) => !x.data.source).length > LARGE;
    draw();
  }).catch((error) => clear(message, errorBox(error, () => window.dispatchEvent(new HashChangeEvent("hashchange")))));

  [showTopics, showEntities, sharedOnly, typeFilter, minMentions].forEach((c) => c.addEventListener("change", draw));
  find.addEventListener("input", () => {
    const cy = state.cy;
    if (!cy) return;
    const q = find.value.trim().toLowerCase();
    cy.elements().removeClass("faded");
    if (!q) return;
    const hits = cy.nodes().filter((n) => String(n.data("label")).toLowerCase().includes(q));
    cy.elements().not(hits.closedNeighborhood()).addClass("faded");
    if (hits.length) cy.animate({ fit: { eles: hits.closedNeighborhood(), padding: 40 } }, { duration: 300 });
  });

  function draw() {
    const { docs, topics, entities } = state.data;
    const els = elements(docs, topics, entities, { showTopics: showTopics.checked, showEntities: showEntities.checked,
      shared: sharedOnly.checked, type: typeFilter.value, minMentions: Number(minMentions.value || 1) });
    if (state.cy) state.cy.destroy();
    if (!docs.length) {
      clear(canvas, el("p", { class: "muted pad" }, "The graph is empty: documents appear once their topics and entities are synced."));
      clear(nodeList);
      return;
    }
    clear(canvas);
    state.cy = cytoscape({ container: canvas, elements: els, style: STYLE, maxZoom: 2.5, minZoom: 0.1 });
    cluster(state.cy);
    // Force-directed, pulled apart by cluster: documents that share much sit together, unrelated ones apart.
    state.cy.layout({ name: "cose", animate: false, randomize: false, nodeRepulsion: () => 12000, idealEdgeLength: () => 70,
      componentSpacing: 120, gravity: 0.4, numIter: els.length > 600 ? 400 : 1000 }).run();
    state.cy.on("tap", "node", (evt) => select(evt.target.id()));
    canvas.dataset.nodes = String(state.cy.nodes().length);
    canvas.dataset.edges = String(state.cy.edges().length);
    const nodes = els.filter((x) => !x.data.source).sort((a, b) => a.data.kind.localeCompare(b.data.kind) || String(a.data.label).localeCompare(String(b.data.label)));
    clear(nodeList, nodes.map((n) => el("li", {}, el("button", { type: "button", class: `link kind-${n.data.kind}`, onclick: () => select(n.data.id) }, `${n.data.kind}: ${n.data.label}`))));
  }

  /** Markov clustering (Cytoscape's own) over the drawn graph: each cluster a colour, documents filled with it. */
  function cluster(cy) {
    if (cy.nodes().length < 4) return;
    try {
      const clusters = cy.elements().markovClustering({ attributes: [(edge) => Math.max(0.1, Number(edge.data("weight") || 1))] });
      clusters.sort((a, b) => b.length - a.length).forEach((members, i) => {
        if (members.length > 1) members.data("cluster", CLUSTER_COLOURS[i % CLUSTER_COLOURS.length]);
      });
      canvas.dataset.clusters = String(clusters.filter((c) => c.length > 1).length);
    } catch (error) {
      console.warn("clustering failed", error); // the graph is drawn without cluster colours
    }
  }

  function select(nodeId) {
    const cy = state.cy;
    const node = cy.getElementById(nodeId);
    cy.elements().unselect();
    node.select();
    const data = node.data();
    const neighbours = node.neighborhood("node").map((n) => n.data());
    const docsHere = neighbours.filter((n) => n.kind === "document");
    if (data.kind === "document") {
      const related = el("div", {}, spinner("Finding related documents"));
      clear(side, el("h2", {}, data.label), el("p", {}, el("a", { href: docHref(data.doc), class: "button" }, "Open document")),
        el("h3", {}, "Topics and entities"), el("ul", {}, neighbours.map((n) => el("li", {}, `${n.kind}: ${n.label}`))),
        el("h3", {}, "Related documents"), related);
      loadInto(related, "Finding related documents", () => call(`/v1/graph/documents/${encodeURIComponent(data.doc)}/related`), (r) =>
        (r.documents || []).length ? el("ul", {}, r.documents.map((d) => el("li", {}, el("a", { href: docHref(d.document_id) }, d.title || d.document_id),
          el("span", { class: "muted small" }, ` score ${Number(d.score).toFixed(2)}; shares ${[...(d.shared_topics || []), ...(d.shared_entities || [])].slice(0, 6).join(", ")}`))))
          : el("p", { class: "muted" }, "No related documents."));
    } else {
      clear(side, el("h2", {}, `${data.kind}: ${data.label}`), data.type ? el("p", { class: "muted" }, data.type) : null,
        el("h3", {}, "Documents"), el("ul", {}, docsHere.map((d) => el("li", {}, el("a", { href: docHref(d.doc) }, d.label)))));
    }
  }

  return () => {
    state.alive = false;
    if (state.cy) state.cy.destroy();
  };
}
