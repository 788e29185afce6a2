// Loaded async, ahead of the other modules: asks for the first position's values while they
// load. The page's query is the query of GET /v1/analysis (plus game= for a review, which
// starts elsewhere), so it is sent as it is; main.js takes the answer over.

const search = location.search;
if (!new URLSearchParams(search).has("game")) {
  globalThis.kalahPrefetch = {
    search,
    answer: fetch(`/v1/analysis${search || "?position=start"}`, { headers: { Accept: "application/json" } })
      .then((response) => (response.ok ? response.json() : null))
      .catch(() => null),
  };
}
