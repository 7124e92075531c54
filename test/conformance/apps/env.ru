# frozen_string_literal: true

# The app of the Rack env tests: GET or POST anything for the env as JSON (its String and
# boolean values, the body read from rack.input, and whether the keys are Strings); /input
# for what each rack.input method returns, in order; /errors writes to rack.errors.
# Runs unmodified on MRI and on Opal, under Rack::Lint where the runtime can load it (but
# /input).
require "json"
require_relative "conformance_lint"

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

report_env = lambda do |env|
  report =
    if env["PATH_INFO"] == "/errors"
      errors = env["rack.errors"]
      errors.puts("conformance: puts to rack.errors")
      errors.write("conformance: write to rack.errors\n")
      errors.flush
      {}
    else
      values = env.select { |_key, value| value.is_a?(String) || value == true || value == false }
      values.merge("rack.input read" => env["rack.input"].read, "keys are Strings" => env.keys.all?(String))
    end
  [200, { "content-type" => "application/json" }, [JSON.generate(report)]]
end
linted = CONFORMANCE_LINT ? Rack::Lint.new(report_env) : report_env

# /input goes around Lint: its rack.input wrapper has no rewind (Rack 3 made it optional),
# and UP! gives it on every runtime.
run lambda { |env|
  next linted.call(env) unless env["PATH_INFO"] == "/input"

  [200, { "content-type" => "application/json" }, [JSON.generate(input_report(env["rack.input"]))]]
}
