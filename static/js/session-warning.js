// Two minutes before the session expires (SESSION_COOKIE_AGE after the last request, since every
// request renews it) a dialog says so; "Seguir trabajando" pings the server, which renews the
// session, and the count starts again. When the time is up the dialog says the session expired
// and offers to sign in again. Without JavaScript nothing shows (the sign-in page still answers).
(function () {
  "use strict";
  var dialog = document.getElementById("session-warning");
  if (!dialog || typeof dialog.showModal !== "function") {
    return;
  }
  var form = dialog.querySelector("form");
  var countdown = dialog.querySelector("[data-countdown]");
  var error = dialog.querySelector("[data-error]");
  var seconds = parseInt(dialog.getAttribute("data-session-seconds"), 10);
  var warnBefore = parseInt(dialog.getAttribute("data-warn-before"), 10);
  if (!(seconds > 0)) {
    return;
  }
  var expiresAt = 0;
  var ticker = null;

  function show(state) {
    dialog.querySelectorAll("[data-state]").forEach(function (node) {
      node.hidden = node.getAttribute("data-state") !== state;
    });
    dialog.setAttribute("aria-labelledby", state === "expired" ? "session-warning-expired-title" : "session-warning-title");
  }

  function left() {
    return Math.max(0, Math.round((expiresAt - Date.now()) / 1000));
  }

  function tick() {
    var remaining = left();
    if (remaining <= 0) {
      clearInterval(ticker);
      show("expired");
      if (!dialog.open) {
        dialog.showModal();
      }
      dialog.querySelector("a[data-state=expired]").focus();
      return;
    }
    if (remaining <= warnBefore && !dialog.open) {
      show("warn");
      error.hidden = true;
      dialog.showModal();
      form.querySelector("button[type=submit]").focus();
    }
    var minutes = Math.floor(remaining / 60);
    var rest = remaining % 60;
    countdown.textContent = minutes + ":" + (rest < 10 ? "0" : "") + rest;
  }

  function start(total) {
    expiresAt = Date.now() + total * 1000;
    clearInterval(ticker);
    ticker = setInterval(tick, 1000);
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var data = new FormData(form);
    fetch(form.action, {method: "POST", body: data, credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) {
        if (response.redirected) {  // sent to the sign-in page: the session had already expired
          expiresAt = 0;
          return null;
        }
        if (!response.ok) {
          throw new Error("not renewed");
        }
        return response.json();
      })
      .then(function (body) {
        if (body === null) {
          tick();
          return;
        }
        dialog.close();
        start(body.seconds || seconds);
      })
      .catch(function () {
        error.hidden = false;
      });
  });
  // Escape would hide the warning without renewing anything: keep it until the choice is made.
  dialog.addEventListener("cancel", function (event) {
    event.preventDefault();
  });
  start(seconds);
})();
