// The counter's cash box: "Efectivo recibido" shows only for cash, and the change to give back
// (tendered − amount) is shown as it is typed. Amounts are parsed to whole cents (no floats);
// the server checks again (tendered ≥ amount) and prints the change on the receipt.
(function () {
  "use strict";
  var form = document.querySelector("form[data-payment-form]");
  if (!form) {
    return;
  }
  var amount = form.querySelector("input[name=amount]");
  var tendered = form.querySelector("input[name=tendered]");
  var cashOnly = form.querySelector("[data-cash-only]");
  var output = form.querySelector("[data-change-output]");
  if (!amount || !tendered || !cashOnly || !output) {
    return;
  }

  function cents(text) {
    var match = /^\$?\s*(\d{1,3}(,\d{3})*|\d+)(\.(\d{1,2}))?$/.exec(text.trim());
    if (!match) {
      return null;
    }
    var fraction = match[4] || "";
    return parseInt(match[1].replace(/,/g, ""), 10) * 100 + parseInt((fraction + "00").slice(0, 2), 10);
  }

  function money(value) {
    var dollars = Math.floor(value / 100).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    var rest = value % 100;
    return "$" + dollars + "." + (rest < 10 ? "0" : "") + rest;
  }

  function method() {
    var checked = form.querySelector("input[name=method]:checked");
    return checked ? checked.value : "";
  }

  function update() {
    var isCash = method() === "cash";
    cashOnly.hidden = !isCash;
    var a = cents(amount.value);
    var t = cents(tendered.value);
    if (!isCash || a === null || t === null) {
      output.textContent = "";
      output.classList.remove("change-short");
      return;
    }
    if (t >= a) {
      output.textContent = output.getAttribute("data-label-change") + " " + money(t - a);
      output.classList.remove("change-short");
    } else {
      output.textContent = output.getAttribute("data-label-short") + " " + money(a - t);
      output.classList.add("change-short");
    }
  }

  form.addEventListener("input", update);
  form.addEventListener("change", update);
  update();
})();
