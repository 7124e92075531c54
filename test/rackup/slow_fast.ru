# frozen_string_literal: true

# /slow sleeps 1 s, and says on stderr when it starts, so a test can wait until its slow
# requests are in the app (never a fixed sleep); any other path is answered at once. The
# body is the path.
run lambda { |env|
  if env["PATH_INFO"] == "/slow"
    $stderr.write("app: /slow started in #{Process.pid}\n")
    sleep 1
  end
  [200, { "content-type" => "text/plain" }, [env["PATH_INFO"]]]
}
