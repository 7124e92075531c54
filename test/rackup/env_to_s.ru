# frozen_string_literal: true

# Echoes the whole Rack env as one String: every request pays for building the full env
# (each key and value is touched by Hash#to_s), unlike hello.ru, which never reads it.
run ->(env) { [200, { "content-type" => "text/plain" }, [env.to_s]] }
