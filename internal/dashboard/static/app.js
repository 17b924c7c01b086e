// kargo-fleet dashboard: draws the target grid from compact JSON, applies
// server-sent updates, and fetches a target's details on click. Read-only.
(function () {
  'use strict';
  const body = document.body, api = body.dataset.api;
  if (!api) return;
  const STATE = {s: 'succeeded', f: 'failed', i: 'in flight', p: 'pending', n: 'not in this rollout', k: 'skipped'};
  const $ = (id) => document.getElementById(id);
  const gridEl = $('grid'), detail = $('detail'), live = $('live');
  const filterEl = $('filter'), stateEl = $('state'), groupEl = $('groupby');
  let grid = null, cells = [], drifted = new Set(), selected = -1;
  let groupBy = body.dataset.groupby || '';
  window.dashboardTimings = {};

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function nameOf(i) { return grid.names[i] || grid.ids[i]; }
  function matches(i) {
    const q = filterEl.value.trim().toLowerCase(), st = stateEl.value;
    if (st && grid.states[i] !== st) return false;
    return !q || nameOf(i).toLowerCase().includes(q) || grid.ids[i].includes(q);
  }
  function cellClass(i) {
    let c = 'c ' + grid.states[i];
    if (drifted.has(i)) c += ' drifted';
    if (!matches(i)) c += ' x';
    if (i === selected) c += ' sel';
    return c;
  }
  function groupCounts(start, n) {
    const k = {};
    for (let i = start; i < start + n; i++) k[grid.states[i]] = (k[grid.states[i]] || 0) + 1;
    return k;
  }
  function countsText(k, n) {
    const parts = [n + ' targets'];
    for (const s of 'fisp') if (k[s]) parts.push(k[s] + ' ' + STATE[s]);
    return parts.join(' · ');
  }
  // fill draws a group's cells; large fleets draw a group only when opened.
  function fill(g) {
    if (g.filled) return;
    g.filled = true;
    const frag = document.createDocumentFragment();
    for (let i = g.start; i < g.start + g.count; i++) {
      const c = el('i', cellClass(i));
      c._i = i;
      cells[i] = c;
      frag.appendChild(c);
    }
    g.box.appendChild(frag);
  }
  function draw() {
    const t0 = performance.now();
    gridEl.textContent = '';
    cells = new Array(grid.ids.length);
    drifted = new Set(grid.drifted);
    const big = grid.ids.length > 1000, anyFailed = grid.states.includes('f');
    gridEl.classList.toggle('big', big);
    let start = 0;
    grid.groups.forEach((gr) => {
      const g = {start: start, count: gr.count, filled: false};
      start += gr.count;
      const k = groupCounts(g.start, g.count);
      const d = el('details', 'group');
      const sum = el('summary', '', gr.name + ' ');
      g.label = el('span', 'n', countsText(k, g.count));
      sum.appendChild(g.label);
      d.appendChild(sum);
      g.box = el('div', 'cells');
      d.appendChild(g.box);
      d._g = g;
      d.addEventListener('toggle', () => { if (d.open) fill(g); });
      // A large fleet opens only the groups with failures (else the first).
      if (!big || k.f || (!anyFailed && gridEl.children.length === 0)) { d.open = true; fill(g); }
      gridEl.appendChild(d);
    });
    gridEl.removeAttribute('aria-busy');
    window.dashboardTimings.gridRenderMs = performance.now() - t0;
    performance.mark('grid-rendered');
  }
  function applyLive(u) {
    grid.states = u.states; grid.freight = u.freight; grid.drifted = u.drifted || [];
    drifted = new Set(grid.drifted);
    for (let i = 0; i < cells.length; i++) if (cells[i]) cells[i].className = cellClass(i);
    for (const d of gridEl.children) {
      const g = d._g;
      if (g) g.label.textContent = countsText(groupCounts(g.start, g.count), g.count);
    }
    if (selected >= 0) showDetail(selected, true);
  }
  async function loadGrid() {
    const t0 = performance.now();
    const r = await fetch(api + '/grid?groupBy=' + encodeURIComponent(groupBy));
    if (!r.ok) { gridEl.textContent = await r.text(); return; }
    grid = await r.json();
    window.dashboardTimings.gridFetchMs = performance.now() - t0;
    draw();
  }
  async function showDetail(i, quiet) {
    if (selected >= 0 && cells[selected]) cells[selected].classList.remove('sel');
    selected = i;
    if (cells[i]) cells[i].classList.add('sel');
    const r = await fetch(api + '/targets/' + encodeURIComponent(grid.ids[i]));
    if (!r.ok) { if (!quiet) { detail.hidden = false; detail.textContent = await r.text(); } return; }
    const t = await r.json();
    detail.textContent = '';
    const close = el('button', 'close', '×');
    close.title = 'close';
    close.onclick = () => { detail.hidden = true; if (cells[selected]) cells[selected].classList.remove('sel'); selected = -1; };
    detail.appendChild(close);
    detail.appendChild(el('h3', '', t.name));
    const dl = el('dl');
    const row = (k, v) => { if (v === undefined || v === '') return; dl.appendChild(el('dt', '', k)); dl.appendChild(el('dd', '', v)); };
    row('state', t.state + (t.reason ? ' (' + t.reason + ')' : ''));
    row('message', t.message);
    row('wave', t.wave);
    row('Stage', t.stage);
    row('source', t.source);
    row('current Freight', t.current || 'none');
    row('previous Freight', t.previous);
    row('health', t.health);
    if (t.drifted) row('drift', 'drifted');
    if (t.application) {
      const a = t.application;
      row('Argo CD', a.application + ': ' + a.class + ' (' + a.reason + ')');
      row('Argo CD says', a.message);
    }
    if (t.breakGlass) {
      const g = t.breakGlass;
      row('break-glass', 'Freight ' + g.freight + ' by ' + (g.actor || 'unknown') + ': ' + g.reason + ' (intended, not drift)');
      row('break-glass Promotion', g.promotion + ', ' + g.created);
    }
    if (t.lastPromotion) {
      const p = t.lastPromotion;
      row('last Promotion', p.name);
      row('its Freight', p.freight);
      row('its phase', p.phase);
      row('its message', p.message);
      row('its rollout', p.rollout);
      row('created', p.created);
    }
    for (const [k, v] of Object.entries(t.labels || {}).sort()) row('label ' + k, v);
    for (const [k, v] of Object.entries(t.params || {}).sort()) row('param ' + k, v);
    detail.appendChild(dl);
    if (t.kargoURL) {
      const a = el('a', '', 'Open the Stage in Kargo');
      a.href = t.kargoURL; a.target = '_blank'; a.rel = 'noopener';
      detail.appendChild(a);
    }
    detail.hidden = false;
  }
  gridEl.addEventListener('click', (e) => { if (e.target._i !== undefined) showDetail(e.target._i); });
  gridEl.addEventListener('mouseover', (e) => {
    const i = e.target._i;
    if (i === undefined || e.target.title) return;
    const f = grid.freight[i], fi = f === '-' ? -1 : parseInt(f, 36);
    e.target.title = nameOf(i) + ' · ' + STATE[grid.states[i]] + ' · ' + (fi >= 0 ? grid.freights[fi] : 'no Freight');
  });
  function refilter() { for (let i = 0; i < cells.length; i++) if (cells[i]) cells[i].className = cellClass(i); }
  filterEl.addEventListener('input', () => {
    if (filterEl.value || stateEl.value) for (const d of gridEl.children) { d.open = true; fill(d._g); }
    refilter();
  });
  stateEl.addEventListener('change', () => filterEl.dispatchEvent(new Event('input')));
  groupEl.addEventListener('change', () => {
    groupBy = groupEl.value;
    const u = new URL(location.href);
    u.searchParams.set('groupBy', groupBy);
    history.replaceState(null, '', u);
    loadGrid().then(connect);
  });

  let source = null;
  function connect() {
    if (source) source.close();
    source = new EventSource(api + '/events?groupBy=' + encodeURIComponent(groupBy));
    source.addEventListener('open', () => { live.className = 'live on'; live.title = 'live'; });
    source.addEventListener('error', () => { live.className = 'live err'; live.title = 'disconnected, retrying'; });
    source.addEventListener('problem', (e) => { live.className = 'live err'; live.title = JSON.parse(e.data); });
    source.addEventListener('update', (e) => {
      live.className = 'live on'; live.title = 'live';
      const u = JSON.parse(e.data);
      $('summary').innerHTML = u.summary;
      window.dashboardTimings.updates = (window.dashboardTimings.updates || 0) + 1;
      if (!grid) return;
      if (u.key !== grid.key) loadGrid(); else applyLive(u);
    });
  }
  loadGrid().then(connect);
})();
