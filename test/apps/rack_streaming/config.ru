# frozen_string_literal: true

require "json"

# A plain Rack 3 app that answers the ways Rack's SPEC allows beyond an Array: an
# enumerable body streamed part by part, a streaming body (a callable given the stream),
# early hints sent before the response, and rack.response_finished callbacks; what a
# server hands the app (rack.early_hints and friends) is described as an app sees it.
class Countdown
  def initialize(from) = (@from = from)

  def each
    @from.downto(1) { |n| yield "#{n}...\n" }
    yield "liftoff\n"
  end
end

finished = []

app = lambda do |env|
  case env["PATH_INFO"]
  when "/each"
    [200, { "content-type" => "text/plain" }, Countdown.new(3)]
  when "/callable"
    body = lambda do |stream|
      stream.write("first\n")
      stream << "second\n"
      stream.close
    end
    [200, { "content-type" => "text/plain" }, body]
  when "/hints"
    hints = env["rack.early_hints"]
    hints&.call({ "link" => ["</style.css>; rel=preload; as=style", "</app.js>; rel=preload; as=script"] })
    [200, { "content-type" => "text/html" }, ["<p>hinted</p>\n"]]
  when "/server"
    hints = env["rack.early_hints"]
    described = {
      "early_hints" => { "class" => hints.class.name, "proc" => hints.is_a?(Proc), "lambda" => hints.is_a?(Proc) && hints.lambda?,
                         "arity" => hints.respond_to?(:arity) ? hints.arity : nil, "callable" => hints.respond_to?(:call) },
      "response_finished" => env["rack.response_finished"].class.name,
      "finished_before" => finished.size.positive?
    }
    env["rack.response_finished"] << ->(*) { finished << :done }
    [200, { "content-type" => "application/json" }, [JSON.generate(described)]]
  when "/empty"
    [204, {}, []]
  else
    [404, { "content-type" => "text/plain" }, ["no such stream\n"]]
  end
end

run app
