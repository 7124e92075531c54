# frozen_string_literal: true

require "digest"
require "json"
require "fileutils"
require "stringio"
require_relative "manifest"

module Up
  module Node
    # The one JavaScript file up_node runs: Opal's runtime, the Node parts of its stdlib, our
    # Ruby glue (opal/up/node) and the app's config.ru as a Rack::Builder block with everything
    # it requires, Rack included, compiled by Opal::Builder. Up::Node::Launcher creates it.
    #
    # It owns a cache directory outside the app (one per config.ru and load path) that holds
    # the bundle, its source map and an Up::Node::Manifest of its inputs. A start whose inputs
    # are unchanged reuses the bundle without even loading the compiler, which is what keeps
    # a warm start under a second.
    class Bundle
      # config.ru or a file it requires does not compile; the message is one line that names
      # the Ruby file and line.
      class CompileError < StandardError; end

      ROOT = File.expand_path("../../..", __dir__)
      # First on the load path, so shims named like stdlib files (uri.rb) shadow Opal's stubs.
      OPAL_DIR = File.join(ROOT, "opal")
      # Next: UP!'s Ruby that runs on both runtimes as it is (lib/up/pub_sub.rb), found here
      # even when the gem is not among the app's.
      LIB_DIR = File.join(ROOT, "lib")
      # Loaded before config.ru: Opal's runtime; File, IO and ENV on Node (its Dir needs the
      # glob package Opal ships: Launcher#node_env); the Rack shims (opal/rack_compat.rb),
      # which must run before any Rack file; our glue.
      PRELUDE = %w[opal nodejs rack_compat up/node/boot].freeze
      # Our own files that shape the output besides those Opal reads.
      TOOLS = [__FILE__, *%w[rackup_processor.rb roda_plugins.rb].map { |f| File.join(__dir__, f) }].freeze

      attr_reader :path, :seconds

      # rackup: the app's config.ru. load_paths: where requires are looked for after our opal/
      # and Opal's own (the bundle's gems by default). cache_root: where the cache lives.
      def initialize(rackup, load_paths: Bundle.gem_paths, cache_root: Bundle.cache_root)
        @rackup = File.expand_path(rackup)
        @load_paths = load_paths
        key = Digest::SHA256.hexdigest(JSON.generate([@rackup, @load_paths]))[0, 16]
        @dir = File.join(cache_root, "#{File.basename(File.dirname(@rackup))}-#{key}")
        @path = File.join(@dir, "bundle.js")
        @manifest = Manifest.new(File.join(@dir, "manifest.json"), OPAL_DIR)
      end

      # The require paths of every gem Bundler (or RubyGems) has activated: the app's Gemfile.
      def self.gem_paths
        Gem.loaded_specs.values.flat_map(&:full_require_paths).uniq
      end

      # $XDG_CACHE_HOME/up/node, else ~/.cache/up/node: never inside the app's directory.
      def self.cache_root
        base = ENV["XDG_CACHE_HOME"].to_s.empty? ? File.join(Dir.home, ".cache") : ENV.fetch("XDG_CACHE_HOME")
        File.join(base, "up", "node")
      end

      # Builds the bundle unless it is fresh; returns :reused or :built. Raises CompileError.
      def ensure_built
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        state = File.file?(@path) && @manifest.current? ? :reused : build
        @seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        state
      end

      private

      def build
        builder = compile
        FileUtils.mkdir_p(@dir)
        write_atomically("#{@path}.map", source_map(builder))
        write_atomically(@path, "#{builder.to_s}\n//# sourceMappingURL=#{File.basename(@path)}.map\n")
        @manifest.write((builder.processed.map(&:abs_path).compact.select { |f| File.file?(f) } + TOOLS).uniq)
        :built
      end

      # Sequential: Opal's default scheduler compiles in forked children, and when one of them
      # hits a syntax error the parent fails with "closed stream" instead of the error. The
      # compiler's warnings (dynamic requires it skips) are dropped: the user gets one line.
      #
      # An app on Roda is compiled twice: the first compile shows which Roda plugins it loads
      # (Up::Node::RodaPlugins; Roda requires them by a name built at run time), the second
      # puts them in the bundle as files Roda's require finds.
      def compile
        require "opal"
        require "opal/builder_scheduler/sequential"
        require_relative "rackup_processor"
        require_relative "roda_plugins"
        # The app's directory last: Opal resolves config.ru's require_relative against the
        # name it was compiled under, and finds only files on its load path.
        @paths = [OPAL_DIR, LIB_DIR, *Opal.paths, *@load_paths, File.dirname(@rackup)]
        builder = compile_app
        plugins = RodaPlugins.new(@paths).requires(builder.processed.map(&:abs_path).compact)
        plugins.empty? ? builder : compile_app(plugins)
      rescue Opal::Builder::MissingRequire => e
        requirer = e.message[/A file required by "(.*?)" wasn't found/, 1]&.then { |f| resolve(f) }
        missing = e.message[/can't find file: (".*?") in:/, 1]
        raise CompileError, "#{requirer ? "#{display(requirer)}: " : ""}cannot load #{missing}: not on the Opal load path"
      rescue ::SyntaxError, Opal::Error => e
        raise CompileError, "#{where(e)}#{e.message.lines.first.strip}"
      end

      # requirable: names compiled in without being run, for requires made at run time.
      def compile_app(requirable = [])
        # A reader of our own: Builder#append_paths would put these after Opal's stdlib,
        # where the shims could not shadow it.
        extensions = Opal::Builder.extensions.flat_map { |ext| [".#{ext}", ".js.#{ext}"] }
        builder = Opal::Builder.new(path_reader: Opal::PathReader.new(@paths, extensions),
                                    scheduler: Opal::BuilderScheduler::Sequential)
        quietly do
          PRELUDE.each { |name| builder.build(name) }
          requirable.each { |name| builder.build_require(name) }
          builder.build_str(rackup_source, File.basename(@rackup))
        end
        builder
      end

      # The map Node applies to stack traces (node --enable-source-maps), so that an app's
      # backtrace names config.ru and its Ruby files. Opal makes an index map (one section per
      # file); Node 20 reads a top-level "sources" even then and drops the map without one.
      def source_map(builder)
        JSON.generate(JSON.parse(builder.source_map.to_json).merge("sources" => []))
      end

      def quietly
        stderr = $stderr
        $stderr = StringIO.new
        yield
      ensure
        $stderr = stderr
      end

      # "config.ru:2: " from the location Opal puts first in the backtrace, where a file is
      # named relative to its load path ("config.ru", "./lib.rb").
      def where(error)
        file, line = error.backtrace.to_a.first.to_s.match(/\A(.+?)(?::(\d+))?:in /)&.captures
        return "" unless file

        "#{display(resolve(file))}#{":#{line}" if line}: "
      end

      def resolve(file)
        @paths.map { |dir| File.expand_path(file, dir) }.find { |f| File.file?(f) } || file
      end

      def display(file)
        file.start_with?("#{Dir.pwd}/") ? file.delete_prefix("#{Dir.pwd}/") : file
      end

      # config.ru as the body of a Rack::Builder block, as Rack::Builder.parse_file reads it,
      # starting on the file's first line so that line numbers stay those of config.ru.
      def rackup_source
        source = File.read(@rackup).sub(/^__END__\n.*\z/m, "")
        "::Up::Node.app = ::Rack::Builder.new { #{source}\n}.to_app\n"
      end

      # A crash mid-write must not leave a truncated bundle that looks fresh.
      def write_atomically(path, data)
        tmp = "#{path}.#{Process.pid}.tmp"
        File.write(tmp, data)
        File.rename(tmp, path)
      end
    end
  end
end
