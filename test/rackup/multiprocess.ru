# frozen_string_literal: true

run ->(env) { [200, { "content-type" => "text/plain" }, [env["rack.multiprocess"].to_s]] }
