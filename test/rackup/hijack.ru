# frozen_string_literal: true

# rack.hijack on `up` (test/test_up_hijack.rb): a behaviour per path, written for Opal on
# Node, where a read cannot wait (Up::Node::HijackedIO: read takes what has arrived, and
# on_readable runs a block when more does).
#   /echo     full hijack: the app's own head, then "echo: LINE" for each line, closed at EOF
#   /partial  partial hijack: the server's head, then "hello " and the client's first line
#   /stream   partial hijack: three parts, then a fourth once the client says "more"
#   /write    partial hijack that only writes (Rack::Lint's stream has no on_readable)
#   /raise    partial hijack whose callable raises
#   /late     keeps rack.hijack and calls it in the next request (/late2)
#   /upgrade  101 with a callable body (Rack 3's upgrade): "got LINE" for each line
#   /env      rack.hijack? and whether rack.hijack is there
# Under /lint/ the same paths, through Rack::Lint.
require "rack/lint"

kept = []

# Writes "echo: LINE" back for each line that arrived; closes once the client ended.
echo_lines = lambda do |io|
  while (line = io.gets)
    io.write("echo: #{line}")
  end
  io.close if io.eof?
end

app = lambda { |env|
  case env["PATH_INFO"]
  when "/echo"
    io = env["rack.hijack"].call
    same = env["rack.hijack"].call.equal?(io) && env["rack.hijack_io"].equal?(io)
    io.write("HTTP/1.1 200 OK\r\nconnection: close\r\nx-same-io: #{same}\r\n\r\n")
    io.on_readable(&echo_lines)
    [200, { "content-length" => "9" }, ["ignored!!"]]
  when "/partial"
    callable = lambda do |io|
      io.write("hello ")
      io.on_readable do
        line = io.gets
        if line
          io.write(line)
          io.close
        elsif io.eof?
          io.close
        end
      end
    end
    [200, { "content-type" => "text/plain", "rack.hijack" => callable }, []]
  when "/stream"
    callable = lambda do |io|
      3.times { |i| io.write("part #{i}\n") }
      io.on_readable do
        if io.gets == "more\n"
          io.write("part 3\n")
          io.close
        elsif io.eof?
          io.close
        end
      end
    end
    [200, { "rack.hijack" => callable }, []]
  when "/write"
    callable = lambda do |io|
      io.write("partial ")
      io << "written\n"
      io.close
    end
    [200, { "rack.hijack" => callable }, []]
  when "/raise"
    [200, { "rack.hijack" => ->(_io) { raise "broken callable" } }, []]
  when "/late"
    kept << env["rack.hijack"]
    [200, {}, ["kept"]]
  when "/late2"
    answer = begin
      kept.pop.call
      "no error"
    rescue IOError => e
      "#{e.class}: #{e.message}"
    end
    [200, {}, [answer]]
  when "/upgrade"
    body = lambda do |io|
      io.on_readable do
        while (line = io.gets)
          io.write("got #{line}")
        end
        io.close if io.eof?
      end
    end
    [101, { "upgrade" => "lines", "connection" => "upgrade" }, body]
  when "/env"
    [200, {}, ["#{env["rack.hijack?"].inspect} #{env.key?("rack.hijack")}"]]
  else
    [404, {}, ["not found"]]
  end
}

map "/lint" do
  use Rack::Lint
  run app
end

run app
