# frozen_string_literal: true

# The app of the HTTP/2 conformance cases (test/test_http2_cases.rb), for every runtime: a
# short body at any path, a body larger than a DATA frame at /big (for the flow-control
# cases), the size of the request body read whole, and the x-case field at /field (so a field
# decoded from the dynamic table is seen to arrive).
BIG = "0123456789" * 2000

run lambda { |env|
  body = case env["PATH_INFO"]
         when "/big" then BIG
         when "/field" then env["HTTP_X_CASE"].to_s
         else env["REQUEST_METHOD"] == "POST" ? env["rack.input"].read.bytesize.to_s : "hello"
         end
  [200, { "content-type" => "text/plain" }, [body]]
}
