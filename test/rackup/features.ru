# frozen_string_literal: true

# One app with a behaviour per path, for tests that start a server as a user does (the
# up_node tests): no runtime-specific code, so it runs unmodified on MRI and on Opal.
require "json"

# An `each` body that records that it was closed, for /closed to report.
class FeaturesBody
  @closed = 0
  class << self
    attr_accessor :closed
  end

  def each
    yield "one "
    yield "two"
  end

  def close
    FeaturesBody.closed += 1
  end
end

# A body that is a file (to_path): servers may send the file instead of calling each.
class FeaturesFile < FeaturesBody
  def to_path
    "examples/hello/config.ru"
  end

  def each
    yield File.read(to_path)
  end
end

# How many rack.response_finished callbacks ran, for /finished (which registers one).
module FeaturesFinished
  @count = 0
  class << self
    attr_accessor :count
  end
end

# How many requests reached the app, for /calls (which does not count itself).
module FeaturesCalls
  @count = 0
  class << self
    attr_accessor :count
  end
end

run lambda { |env|
  FeaturesCalls.count += 1 unless env["PATH_INFO"] == "/calls"
  case env["PATH_INFO"]
  when "/calls"
    [200, { "content-type" => "text/plain" }, [FeaturesCalls.count.to_s]]
  when "/env"
    plain = env.select { |_key, value| value.is_a?(String) || value == true || value == false }
    [200, { "content-type" => "application/json" }, [JSON.generate(plain)]]
  when "/echo"
    input = env["rack.input"]
    first = input.read(3)
    rest = input.read
    input.rewind
    all = input.read
    [200, { "content-type" => "text/plain" }, ["#{first}|#{rest}|#{all.bytesize}|#{all.encoding}"]]
  when "/stream"
    body = lambda do |stream|
      3.times { |i| stream.write("part #{i}\n") }
      stream.close
    end
    [200, { "content-type" => "text/plain" }, body]
  when "/each"
    [200, { "content-type" => "text/plain" }, FeaturesBody.new]
  when "/file"
    [200, { "content-type" => "text/plain" }, FeaturesFile.new]
  when "/closed"
    [200, { "content-type" => "text/plain" }, [FeaturesBody.closed.to_s]]
  when "/finished"
    env["rack.response_finished"] << ->(*) { FeaturesFinished.count += 1 }
    [200, { "content-type" => "text/plain" }, [FeaturesFinished.count.to_s]]
  when "/array_with_close"
    body = ["closable"]
    def body.close
      FeaturesBody.closed += 1
    end
    [200, { "content-type" => "text/plain" }, body]
  when "/bad_part"
    [200, { "content-type" => "text/plain" }, [1]]
  when "/no_content_bad_part"
    [204, {}, [1]]
  when "/cookies"
    [200, { "set-cookie" => ["a=1; path=/", "b=2"], "x-multi" => %w[one two] }, ["ok"]]
  when "/hints"
    env["rack.early_hints"]&.call({ "link" => "</style.css>; rel=preload" })
    [200, { "content-type" => "text/plain" }, ["after hints"]]
  when "/fail"
    raise ArgumentError, "kaboom from the app"
  else
    [200, { "content-type" => "text/plain" }, ["hello"]]
  end
}
