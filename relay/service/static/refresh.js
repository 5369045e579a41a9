// Auto-refresh of running work: re-fetch this page, swap <main>, stop once nothing runs.
(function () {
  var every = Number(document.body.dataset.refreshMs || 5000);
  function tick() {
    if (document.hidden) { return setTimeout(tick, every); }
    fetch(location.href, {cache: "no-store"}).then(function (r) { return r.text(); }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, "text/html");
      var fresh = doc.querySelector("main");
      if (fresh) { document.querySelector("main").replaceWith(fresh); }
      document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      if (doc.body.dataset.live === "1") { setTimeout(tick, every); } else { document.body.dataset.live = "0"; }
    }).catch(function () { setTimeout(tick, every); });
  }
  setTimeout(tick, every);
})();
