# frozen_string_literal: true

# Answers with RACK_ENV as the app sees it (-e/--environment).
run ->(_env) { [200, { "content-type" => "text/plain" }, [ENV.fetch("RACK_ENV", "(unset)")]] }
