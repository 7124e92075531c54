# frozen_string_literal: true

require_relative "version"

module Up
  # What a start says about itself, the same on every runtime: the log line before "listening
  # on" (version, runtime, environment, config file, app, workers, threads, preload) and the
  # process titles (`up_ruby 0.2.0 master [shop] tcp://127.0.0.1:3000`, as `ps` shows them).
  # The runners use it on up_ruby; the Node launchers hand its words to Node (#to_h).
  class BootBanner
    # program: up_ruby, up_node or up. platform: "ruby 3.3.0", or nil when Node fills it in.
    def initialize(options, program:, platform: "ruby #{RUBY_VERSION}")
      @options = options
      @program = program
      @platform = platform
    end

    # "UP! 0.2.0 (up_ruby, ruby 3.3.0): environment production, config config/up.rb, app
    # config.ru, workers 4, threads 5, preload".
    def to_s
      "UP! #{VERSION} (#{@program}, #{@platform}): #{details}"
    end

    # The line without its head, for Node, which names its own version.
    def details
      config = @options[:config_file] || "none"
      app = @options[:static_only] ? "none (--static-only)" : @options[:rackup]
      environment = @options[:environment] || ENV.fetch("RACK_ENV", "development")
      threads = @platform ? "threads #{@options[:threads]}" : "one thread (Node)"
      parts = ["environment #{environment}", "config #{config}", "app #{app}", workers, threads]
      parts << (@options[:preload] ? "preload" : "no preload") if @options[:workers] > 1
      parts.join(", ")
    end

    # "up_ruby 0.2.0 worker 1 [shop] tcp://127.0.0.1:3000"; role nil for one process. urls: the
    # sockets as the log names them (http://, https://, unix://), shown as binds are given.
    def title(role, urls)
      binds = urls.map { |url| url.sub(%r{\Ahttps://}, "ssl://").sub(%r{\Ahttp://}, "tcp://") }
      [@program, VERSION, role, "[#{app_name}]", *binds].compact.join(" ")
    end

    # The app's name in titles: its directory's, as Puma's tag.
    def app_name
      rackup = @options[:rackup] unless @options[:static_only]
      File.basename(rackup ? File.dirname(File.expand_path(rackup)) : Dir.pwd)
    end

    private

    def workers
      @options[:workers] > 1 ? "workers #{@options[:workers]}" : "one process"
    end
  end
end
