"""The one query layer the dashboard JSON (``relay.service.routes.dashboard``) and the pages
(``relay.service.routes.page``, ``relay.service.routes.page_ops``) both read through: a page shows
what its JSON twin returns, plus what only a reader needs (links, sums, chart geometry).

``common``       links (GitHub commit / PR, our pages), HUD's conclusion letters, spec groups
``runs``         the run listing, one run (JSON) and the run page's view of it
``grid``         the HUD-style grid: upstream commits × backend / spec group (and downstream jobs)
``commits``      one commit: its runs, the runs that blamed it, downstream jobs
``tests``        one test's history (with its SVG chart), search by test id, op and verdict
``deliveries``   webhook deliveries with their run's progress and retry times
``charts``       small inline SVG charts (bars with a threshold line), no JavaScript
"""
