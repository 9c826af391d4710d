// On a phone a long main menu (the staff's) folds behind a "Menú" button, as USWDS's header does;
// the landowner's short menu stays open. Without JavaScript the menu simply wraps onto more lines.
document.querySelectorAll("nav[data-collapsible]").forEach(function (nav) {
  var list = nav.querySelector("ul");
  var button = nav.querySelector(".nav-toggle");
  if (!list || !button || list.children.length <= 3) {
    return;
  }
  nav.classList.add("nav-js");
  button.addEventListener("click", function () {
    var open = nav.classList.toggle("nav-open");
    button.setAttribute("aria-expanded", open ? "true" : "false");
  });
});
