# frozen_string_literal: true

# Shows the Rack env UP! builds: `bundle exec exe/up_ruby examples/env/config.ru`, then
# `curl 'http://localhost:3000/some/path?x=1'`.
run lambda { |env|
  lines = env.sort_by(&:first).map { |k, v| "#{k} = #{v.inspect}" }
  [200, { "content-type" => "text/plain" }, [lines.join("\n"), "\n"]]
}
