(function () {
  const problems = [];
  const W = document.documentElement.clientWidth;
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const name = e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + " '" + (e.textContent || "").trim().slice(0, 30) + "'";
  const overlap = (a, b, tol) => Math.min(a[2], b[2]) - Math.max(a[0], b[0]) > tol && Math.min(a[3], b[3]) - Math.max(a[1], b[1]) > tol;
  const empty = b => b[2] - b[0] <= 0 || b[3] - b[1] <= 0;
  for (const e of document.body.querySelectorAll("*")) {
    const b = box(e);
    if (empty(b) || e.closest("svg") && e.tagName.toLowerCase() !== "svg") continue;
    if (b[0] < -0.5 || b[2] > W + 0.5) problems.push("past the window's edge: " + name(e));
    if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== "visible") problems.push("clips its content: " + name(e));
  }
  for (const parent of [document.body, ...document.querySelectorAll("section, div")]) {
    const kids = [...parent.children].filter(k => !empty(box(k)));
    for (let i = 0; i < kids.length; i++) for (let j = i + 1; j < kids.length; j++)
      if (overlap(box(kids[i]), box(kids[j]), 0.5)) problems.push("overlap: " + name(kids[i]) + " / " + name(kids[j]));
  }
  for (const svg of document.querySelectorAll("svg")) {
    const s = box(svg);
    const where = (svg.closest("section") || document.body).id;
    const texts = [...svg.querySelectorAll("text")].filter(t => t.textContent.trim() && !empty(box(t)));
    for (const t of texts) {
      const b = box(t);
      if (b[0] < s[0] - 1 || b[1] < s[1] - 1 || b[2] > s[2] + 1 || b[3] > s[3] + 1) problems.push(where + ": text cut by its figure: " + name(t));
    }
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++)
      if (overlap(box(texts[i]), box(texts[j]), 1.5)) problems.push(where + ": texts overlap: " + name(texts[i]) + " / " + name(texts[j]));
    const axes = [...svg.querySelectorAll('g[id^="axes_"] > g[id^="patch_"]')];
    for (const legend of svg.querySelectorAll('g[id^="legend_"]'))
      for (const ax of axes) if (overlap(box(legend), box(ax), 0.5)) problems.push(where + ": legend over a plot: " + name(legend));
  }
  const out = document.createElement("pre");
  out.id = "layout-problems";
  out.textContent = JSON.stringify(problems);
  document.body.appendChild(out);
})();
