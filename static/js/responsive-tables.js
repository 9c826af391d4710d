// Tables marked .table-stack become labelled rows on a phone (static/css/app.css). Changing a
// table's CSS display makes some browsers (Safari, older Chromium and Firefox) stop announcing it
// as a table, so its parts get their table roles back explicitly (after Adrian Roselli's
// "AddTableARIA"); the roles repeat what the markup already says, so nothing changes elsewhere.
// A data cell the template left without a data-label takes its column header's text; a header's
// line breaks (<br>) count as spaces ("Último día<br>para pagar"). base.html loads it
// on every page; a page without such a table costs one query of the DOM.
function headerText(th) {
  var copy = th.cloneNode(true);
  copy.querySelectorAll("br").forEach(function (br) { br.replaceWith(" "); });
  return copy.textContent.replace(/\s+/g, " ").trim();
}
document.querySelectorAll("table.table-stack").forEach(function (table) {
  var headers = [];
  table.querySelectorAll("thead tr:last-child th").forEach(function (th) {
    for (var span = th.colSpan || 1; span > 0; span -= 1) {
      headers.push(headerText(th));
    }
  });
  table.setAttribute("role", "table");
  table.querySelectorAll("thead, tbody, tfoot").forEach(function (group) { group.setAttribute("role", "rowgroup"); });
  table.querySelectorAll("tr").forEach(function (row) {
    row.setAttribute("role", "row");
    var column = 0;
    Array.prototype.forEach.call(row.children, function (cell) {
      if (cell.tagName === "TD") {
        cell.setAttribute("role", "cell");
        if (!cell.hasAttribute("data-label") && headers[column] && cell.colSpan === 1 && cell.textContent.trim()) {
          cell.setAttribute("data-label", headers[column]);
        }
      } else {
        cell.setAttribute("role", cell.getAttribute("scope") === "row" ? "rowheader" : "columnheader");
      }
      column += cell.colSpan || 1;
    });
  });
});
// A wide table that scrolls sideways in its .table-wrap is reached by the keyboard: the wrapper
// becomes a focusable region named by the table's caption (WCAG 2.1.1; axe's
// scrollable-region-focusable). Wrappers the template made focusable already are left alone.
document.querySelectorAll(".table-wrap:not([tabindex])").forEach(function (wrap) {
  if (wrap.scrollWidth <= wrap.clientWidth) { return; }
  var caption = wrap.querySelector("caption");
  wrap.setAttribute("tabindex", "0");
  wrap.setAttribute("role", "region");
  wrap.setAttribute("aria-label", caption ? caption.textContent.replace(/\s+/g, " ").trim() : document.title);
});
