# frozen_string_literal: true

# Answers whether OpenSSL is loaded in the worker that serves the request.
run ->(_env) { [200, { "content-type" => "text/plain" }, [defined?(OpenSSL).inspect]] }
