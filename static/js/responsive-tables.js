// Tables marked .table-stack become labelled rows on a phone (static/css/app.css). Changing a
// table's CSS display makes some browsers (Safari, older Chromium and Firefox) stop announcing it
// as a table, so its parts get their table roles back explicitly (after Adrian Roselli's
// "AddTableARIA"); the roles repeat what the markup already says, so nothing changes elsewhere.
document.querySelectorAll("table.table-stack").forEach(function (table) {
  table.setAttribute("role", "table");
  table.querySelectorAll("thead, tbody, tfoot").forEach(function (group) { group.setAttribute("role", "rowgroup"); });
  table.querySelectorAll("tr").forEach(function (row) { row.setAttribute("role", "row"); });
  table.querySelectorAll("td").forEach(function (cell) { cell.setAttribute("role", "cell"); });
  table.querySelectorAll("th").forEach(function (cell) {
    cell.setAttribute("role", cell.getAttribute("scope") === "row" ? "rowheader" : "columnheader");
  });
});
