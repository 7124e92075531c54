# frozen_string_literal: true

require_relative "hooks"
require_relative "options"

module Up
  # The config file (-C FILE, or config/up.rb when there is one): Ruby in a DSL that reads like
  # Puma's. Evaluating it gives settings, each with the file and line that set it (for Up::Options'
  # messages: "config/up.rb:3: port must be between 0 and 65535"), and the hooks it names.
  # Created by Up::CLI and the rack handler; the command line wins over what it sets.
  class ConfigFile
    class Error < StandardError; end

    DEFAULT_PATH = "config/up.rb"

    # values: setting key => value; names: key => "file:line: directive"; hooks: an Up::Hooks.
    attr_reader :path, :values, :names, :hooks

    def self.load(path)
      new(path).tap(&:evaluate)
    end

    def initialize(path)
      @path = path
      @values = {}
      @names = {}
      @hooks = Hooks.new
    end

    def evaluate
      DSL.new(self).instance_eval(File.read(@path), @path, 1)
      self
    rescue SystemCallError => e
      raise Error, "cannot read the config file #{@path}: #{e.message}"
    rescue SyntaxError => e
      raise Error, e.message.lines.first.chomp
    end

    # Called by the DSL.
    def set(key, value, location, directive)
      @values[key] = value
      @names[key] = "#{where(location)}: #{directive}"
    end

    def add_bind(spec, location)
      add(:bind, spec, location, "bind")
    end

    # A setting that is a list: each directive adds to it.
    def add(key, value, location, directive)
      (@values[key] ||= []) << value
      @names[key] = "#{where(location)}: #{directive}"
    end

    def add_tls_host(host, location)
      add(:tls_hosts, host, location, "tls_host")
    end

    def add_hook(name, block, location)
      raise Error, "#{where(location)}: #{name} needs a block" unless block

      @hooks.add(name, &block)
    end

    def where(location)
      "#{location.path}:#{location.lineno}"
    end

    # The directives. Each takes the line that called it for messages; anything else is an
    # error naming that line. Plain Ruby (ENV, require, conditionals) works as anywhere.
    class DSL
      # Directives that are a setting under the same name, with one value.
      PLAIN = (Options::DEFAULTS.keys - %i[bind threads preload config_file static trusted_proxy tls_hosts acme_domains]).freeze

      def initialize(file)
        @file = file
      end

      PLAIN.each do |key|
        define_method(key) { |value| @file.set(key, value, caller_locations(1, 1).first, key.to_s) }
      end

      def bind(spec)
        @file.add_bind(spec, caller_locations(1, 1).first)
      end

      # static "/assets=public/assets:vendor/assets", or static "/assets", "public/assets", ...;
      # again for more.
      def static(spec, *dirs)
        spec = "#{spec}=#{dirs.join(":")}" unless dirs.empty?
        @file.add(:static, spec, caller_locations(1, 1).first, "static")
      end

      # acme_domain "example.com"; again for more.
      def acme_domain(name)
        @file.add(:acme_domains, name, caller_locations(1, 1).first, "acme_domain")
      end

      # trusted_proxy "10.0.0.0/8"; again for more.
      def trusted_proxy(spec)
        @file.add(:trusted_proxy, spec, caller_locations(1, 1).first, "trusted_proxy")
      end

      # threads 5, or threads 1, 5 (Puma's minimum and maximum: UP! runs up to the maximum).
      def threads(min, max = nil)
        @file.set(:threads, max.nil? ? min : "#{min}:#{max}", caller_locations(1, 1).first, "threads")
      end

      def preload_app!(flag = true)
        @file.set(:preload, flag, caller_locations(1, 1).first, "preload_app!")
      end

      def pidfile(path)
        @file.set(:pid_file, path, caller_locations(1, 1).first, "pidfile")
      end

      # tls_host "api.example.com", cert_file: "...", key_file: "...", ca_file: nil: the
      # certificate TLS clients naming that host get (SNI); again for more hosts.
      def tls_host(host, cert_file: nil, key_file: nil, ca_file: nil)
        @file.add_tls_host({ host: host, cert_file: cert_file, key_file: key_file, ca_file: ca_file }.compact,
                           caller_locations(1, 1).first)
      end

      Hooks::NAMES.each do |name|
        define_method(name) { |&block| @file.add_hook(name, block, caller_locations(1, 1).first) }
      end

      def method_missing(name, *_args)
        location = caller_locations(1, 1).first
        raise Error, "#{@file.where(location)}: unknown directive #{name}"
      end

      def respond_to_missing?(_name, _include_private = false)
        false
      end
    end
  end
end
