// The receipt's print button. An external file because the Content-Security-Policy allows no
// inline script; without JavaScript the button stays hidden and the browser's own Print works.
document.querySelectorAll("[data-print]").forEach(function (button) {
  button.hidden = false;
  button.addEventListener("click", function () { window.print(); });
});
