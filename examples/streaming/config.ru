# frozen_string_literal: true

# A streaming (callable) body: the response goes out chunked as it is written.
# `curl -N http://localhost:3000/` shows one line a second.
run lambda { |_env|
  body = lambda do |stream|
    5.times do |i|
      stream.write("tick #{i}\n")
      stream.flush
      sleep 1
    end
  ensure
    stream.close
  end
  [200, { "content-type" => "text/plain" }, body]
}
