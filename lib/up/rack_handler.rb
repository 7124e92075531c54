# frozen_string_literal: true

require_relative "cli"
require_relative "launcher"

module Up
  # `rackup -s up` and `rails server -u up`: rackup hands over the app and its options
  # (:Host, :Port, -O NAME=VALUE pairs) and UP! serves the app in this process, threads and
  # limits as on the command line.
  module RackHandler
    def self.run(app, **options)
      settings = CLI::DEFAULTS.merge(workers: 1)
      settings[:bind] = options[:Host] if options[:Host]
      settings[:port] = Integer(options[:Port]) if options[:Port]
      CLI::DEFAULTS.each_key do |key|
        value = options[key] || options[key.to_s.tr("_", "-").to_sym]
        next if value.nil? || value == true

        settings[key] = CLI::DEFAULTS[key].is_a?(Integer) ? Integer(value) : value
      end
      @launcher = Launcher.new(settings, app: app)
      yield @launcher if block_given?
      @launcher.run
    end

    def self.shutdown
      @launcher&.stop
    end

    def self.valid_options
      {
        "threads=N" => "App threads (#{CLI::DEFAULTS[:threads]}); 0 calls the app on the event loop",
        "max_body_size=BYTES" => "Largest request body (#{CLI::DEFAULTS[:max_body_size]})",
        "keepalive_timeout=SECONDS" => "Idle keep-alive timeout (#{CLI::DEFAULTS[:keepalive_timeout]})"
      }
    end
  end
end
