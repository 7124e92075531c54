# frozen_string_literal: true

require_relative "config_file"
require_relative "options"
require_relative "launcher"

module Up
  # `rackup -s up` and `rails server -u up`: rackup hands over the app and its options
  # (:Host, :Port, -O NAME=VALUE pairs) and UP! serves the app in this process, threads and
  # limits as on the command line, checked by Up::Options. The config file (config/up.rb, or
  # -O config_file=PATH) counts too, as Puma's does: below what the user typed, above what the
  # caller only defaulted (rails server says which is which with :user_supplied_options;
  # rackup cannot, so all it passes counts as typed).
  module RackHandler
    def self.run(app, **options)
      settings = settings(options)
      @launcher = Launcher.new(settings, app: app, hooks: @hooks)
      yield @launcher if block_given?
      @launcher.run
    rescue Options::Error, ConfigFile::Error, StartError => e
      # rackup prints anything else a handler raises with its backtrace; a bad value or a
      # port in use is the user's to fix, so it ends the process the way rackup's own usage
      # errors do: one line and abort (status 1); with trace, the backtrace first.
      warn (e.cause || e).full_message(highlight: false, order: :top) if settings&.fetch(:trace) || ENV["UP_TRACE"] == "1"
      abort "up: #{e.message}"
    end

    # What rails server says it boots: "=> Booting UP!" (it names the handler by to_s).
    def self.to_s
      "UP!"
    end

    # rackup's options as checked settings: :Host and :Port (from its -o and -p) and our
    # settings passed with -O, under their own name or with dashes (-O head_timeout=0.5,
    # -O head-timeout=0.5), their values Strings, or true for a bare -O NAME; then the config
    # file and the environment under them. One process unless -O workers=N or the file says
    # otherwise. Other keys are rackup's own and ignored. Raises Options::Error, whose message
    # names the option as it was typed (-O head_timeout, -p), or ConfigFile::Error.
    def self.settings(options)
      typed, names = typed_settings(options)
      defaults = {}
      if (user = options[:user_supplied_options])
        { bind: :Host, port: :Port }.each do |key, rack_key|
          defaults[key] = typed.delete(key) unless user.include?(rack_key)
        end
      end
      values, env_names = Options.from_environment
      file = config_file(typed[:config_file])
      values = { workers: 1, config_file: file&.path }.merge(defaults).merge(values).merge(file&.values || {}).merge(typed)
      names = env_names.merge(file&.names || {}).merge(names)
      @hooks = file&.hooks || Hooks.new
      Options.new(values, names: names).to_h
    end

    def self.typed_settings(options)
      typed = { bind: options[:Host] && [options[:Host]], port: options[:Port] }.compact
      names = { bind: "-o", port: "-p" }
      Options::DEFAULTS.each_key do |key|
        next if key == :rackup # rackup has loaded the app already

        name = [key, key.to_s.tr("_", "-").to_sym].find { |n| options.key?(n) }
        next unless name

        typed[key] = options[name]
        names[key] = "-O #{name}"
      end
      [typed, names]
    end
    private_class_method :typed_settings

    def self.config_file(path)
      return ConfigFile.load(path) if path
      return ConfigFile.load(ConfigFile::DEFAULT_PATH) if File.file?(ConfigFile::DEFAULT_PATH)

      nil
    end
    private_class_method :config_file

    def self.shutdown
      @launcher&.stop
    end

    def self.valid_options
      {
        "threads=N" => "Requests run at once (#{Options::DEFAULTS[:threads]}); 0 means 1",
        "max_body_size=BYTES" => "Largest request body (#{Options::DEFAULTS[:max_body_size]})",
        "keepalive_timeout=SECONDS" => "Idle keep-alive timeout (#{Options::DEFAULTS[:keepalive_timeout]})"
      }
    end
  end
end
