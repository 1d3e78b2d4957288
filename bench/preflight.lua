-- wrk script: every request is a CORS preflight (`npm run bench -- cors`), as a browser sends it
-- before a page's request carrying a key: OPTIONS with Origin and Access-Control-Request-Method.
wrk.method = "OPTIONS"
wrk.headers["Origin"] = "https://app.example.com"
wrk.headers["Access-Control-Request-Method"] = "GET"
wrk.headers["Access-Control-Request-Headers"] = "authorization"
