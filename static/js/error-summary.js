// The error summary (templates/includes/error_summary.html) takes the focus when the page opens,
// so keyboard and screen-reader users start from the list of what to correct.
document.addEventListener("DOMContentLoaded", function () {
  var summary = document.getElementById("error-summary");
  if (summary) {
    summary.focus();
  }
});
