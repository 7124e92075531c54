# frozen_string_literal: true

# Answers with the pid of the worker that served the request.
run ->(_env) { [200, { "content-type" => "text/plain" }, [Process.pid.to_s]] }
