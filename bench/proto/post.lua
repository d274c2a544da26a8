wrk.method = "POST"
wrk.body = '{"ref":"refs/heads/main","repository":{"name":"photos"},"pusher":{"name":"ann"}}'
wrk.headers["Content-Type"] = "application/json"
