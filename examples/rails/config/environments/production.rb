# frozen_string_literal: true

# Production as deployed, less TLS: UP! serves plain HTTP here (the benchmark and the tests
# run on 127.0.0.1), so force_ssl is off. The secret comes from SECRET_KEY_BASE and the
# database from config/database.yml or DATABASE_URL.
Rails.application.configure do
  config.enable_reloading = false
  config.eager_load = true
  config.consider_all_requests_local = false
  config.action_controller.perform_caching = true

  # public/ (the error pages, and public/assets: the stylesheet and script after
  # `rails assets:precompile`) is answered by UP!'s engine before Rails is called, without any
  # setting. Rails' own file server stays on for servers that do not (Puma in bench/run's rails
  # table); with UP! it never sees those requests.
  config.public_file_server.enabled = true
  config.force_ssl = false

  config.logger = ActiveSupport::TaggedLogging.new(ActiveSupport::Logger.new($stdout))
  config.log_tags = [:request_id]
  config.log_level = ENV.fetch("RAILS_LOG_LEVEL", "info")

  config.i18n.fallbacks = true
  config.active_support.report_deprecations = false
  config.active_record.dump_schema_after_migration = false
  config.active_record.attributes_for_inspect = [:id]
end
