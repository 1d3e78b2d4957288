-- wrk script: every request is a POST of VERIFY_BODY (JSON) to the URL given, as a server verifying its
-- requests sends them (`npm run bench -- verify`); the Authorization header comes from wrk's -H.
wrk.method = "POST"
wrk.body = os.getenv("VERIFY_BODY")
wrk.headers["Content-Type"] = "application/json"
