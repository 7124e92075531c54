# frozen_string_literal: true

# The app of the Rack env tests: GET or POST anything for the env as JSON (its String and
# boolean values, the body read from rack.input, its keys and whether they are Strings); /spec for
# the SPEC's rules on values; /input for what each rack.input method returns, in order;
# /errors writes to rack.errors.
# Runs unmodified on MRI and on Opal, under Rack::Lint (but /input).
require "json"
require "rack/lint"

# rack.input's answers in a fixed order: partial reads, gets, reads at the end, rewind, each.
def input_report(input)
  report = { "read(3)" => input.read(3), "gets" => input.gets, "read" => input.read,
             "read at eof" => input.read, "read(3) at eof" => input.read(3) }
  input.rewind
  lines = []
  input.each { |line| lines << line }
  report["each"] = lines
  input.rewind
  all = input.read
  report.merge("read after rewind" => all, "encoding" => all.encoding.to_s)
end

# The SPEC's rules on the env's values, each true or false: what Rack::Lint checks, asked
# directly, so that they are checked on runtimes that cannot load Lint too.
def spec_report(env)
  cgi = %w[REQUEST_METHOD SCRIPT_NAME PATH_INFO QUERY_STRING SERVER_NAME SERVER_PORT SERVER_PROTOCOL]
  responds = ->(object, methods) { methods.all? { |m| object.respond_to?(m) } }
  {
    "CGI values are Strings" => cgi.all? { |key| env[key].is_a?(String) },
    "HTTP_ values are Strings" => env.select { |key, _| key.start_with?("HTTP_") }.values.all?(String),
    "multithread, multiprocess, run_once are booleans" =>
      %w[rack.multithread rack.multiprocess rack.run_once].all? { |key| [true, false].include?(env[key]) },
    "rack.input has gets, each, read" => responds.call(env["rack.input"], %i[gets each read]),
    "rack.errors has puts, write, flush" => responds.call(env["rack.errors"], %i[puts write flush]),
    "rack.response_finished is an Array" => env["rack.response_finished"].is_a?(Array),
    "rack.early_hints is callable" => env["rack.early_hints"].respond_to?(:call)
  }
end

report_env = lambda do |env|
  report =
    if env["PATH_INFO"] == "/spec"
      spec_report(env)
    elsif env["PATH_INFO"] == "/errors"
      errors = env["rack.errors"]
      errors.puts("conformance: puts to rack.errors")
      errors.write("conformance: write to rack.errors\n")
      errors.flush
      {}
    else
      values = env.select { |_key, value| value.is_a?(String) || value == true || value == false }
      values.merge("rack.input read" => env["rack.input"].read, "keys are Strings" => env.keys.all?(String),
                   "keys" => env.keys.sort)
    end
  [200, { "content-type" => "application/json" }, [JSON.generate(report)]]
end
linted = Rack::Lint.new(report_env)

# /input goes around Lint: its rack.input wrapper has no rewind (Rack 3 made it optional),
# and UP! gives it on every runtime.
run lambda { |env|
  next linted.call(env) unless env["PATH_INFO"] == "/input"

  [200, { "content-type" => "application/json" }, [JSON.generate(input_report(env["rack.input"]))]]
}
