// Search results first (issue 18 point 9). After a search the result count takes the focus, so a
// screen reader says how many were found and a phone opens at the results, not at the form.
// Filters folded in a <details data-open-when-wide> open when they sit beside the results (a wide
// screen); the link to them opens them on a phone, where they come after the results.
document.addEventListener("DOMContentLoaded", function () {
  var count = document.querySelector("[data-focus-after-search]");
  if (count) {
    count.focus();
  }
  var wide = window.matchMedia("(min-width: 64em)").matches;
  document.querySelectorAll("details[data-open-when-wide]").forEach(function (details) {
    if (wide) {
      details.open = true;
    }
    var content = details.querySelector("[id]");
    if (!content) {
      return;
    }
    document.querySelectorAll('a[href="#' + content.id + '"]').forEach(function (link) {
      link.addEventListener("click", function () {
        details.open = true;
      });
    });
  });
});
