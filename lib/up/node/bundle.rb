# frozen_string_literal: true

require "digest"
require "json"
require "fileutils"
require "stringio"
require_relative "manifest"
require_relative "../load_failure"

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
      OPAL_DIR = File.join(ROOT, "opal")
      # Loaded before config.ru, after Up::Node::OpalBuilder::PRELUDE (Opal's runtime, the
      # fixes of its gaps, the Rack shims, and through those File, IO and ENV on Node, whose
      # Dir needs the glob package Opal ships: Launcher#node_env): our glue.
      GLUE = "up/node/boot"
      # Our own files that shape the output besides those Opal reads: the build, the
      # compiler and its rewriters.
      TOOLS = Dir[File.join(__dir__, "**", "*.rb")].sort.freeze

      attr_reader :path, :seconds

      # The file that holds Opal's parser for this bundle, when the app needs one.
      def parser_path
        "#{@path.delete_suffix(".js")}.parser.js" # as Up::Node::OpalBuilder.parser_path
      end

      # What Node loads at the start, in bytes: the bundle; and the parser, loaded later.
      def sizes
        [@path, parser_path].map { |file| File.file?(file) ? File.size(file) : nil }
      end

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

      # Builds the bundle unless it is fresh (calling the block first, if given); returns :reused
      # or :built. Raises CompileError.
      def ensure_built
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        fresh = File.file?(@path) && @manifest.current?
        yield if !fresh && block_given?
        state = fresh ? :reused : build
        @seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        state
      end

      private

      # The parser file, when there is one, is written before the bundle: a bundle that is
      # there and fresh has its parser beside it.
      def build
        builder = compile
        parser = compile_parser(builder)
        FileUtils.mkdir_p(@dir)
        # What the last bundle's String evals compiled to belongs to its parser.
        FileUtils.rm_f("#{@path.delete_suffix(".js")}.evals.json")
        if parser
          write_atomically(parser_path, parser.to_s)
        else
          FileUtils.rm_f(parser_path)
        end
        write_atomically("#{@path}.map", source_map(builder))
        write_atomically(@path, "#{builder.to_s}\n//# sourceMappingURL=#{File.basename(@path)}.map\n")
        inputs = [builder, parser].compact.flat_map { |b| b.processed.map(&:abs_path) }
        @manifest.write((inputs.compact.select { |f| File.file?(f) } + TOOLS).uniq)
        :built
      ensure
        @warmup&.stop
      end

      # Opal's parser and compiler, as a file beside the bundle loaded on the first String
      # eval (opal/opal_fixes/string_eval.rb), when the app's files have one; else nil.
      def compile_parser(builder)
        unless OpalBuilder.string_eval?(builder)
          @warmup&.stop
          return
        end

        @warmup&.finish
        quietly { OpalBuilder.parser(builder, @paths) }
      end

      # The compiler's warnings (dynamic requires it skips) are dropped: the user gets one line.
      #
      # An app on Roda or Tilt is compiled more than once: a compile shows which Roda plugins
      # (Up::Node::RodaPlugins) and Tilt engines (Up::Node::TiltTemplates) it can load, which
      # both require by a name made at run time; the next puts them in the bundle as files
      # those requires find.
      def compile
        require_relative "opal_builder"
        require_relative "parser_warmup"
        require_relative "roda_plugins"
        require_relative "tilt_templates"
        # The app's directory last: Opal resolves config.ru's require_relative against the
        # name it was compiled under, and finds only files on its load path.
        # lib/: UP!'s Ruby that runs on both runtimes as it is (lib/up/pub_sub.rb), found even
        # when the gem is not among the app's.
        @paths = OpalBuilder.load_path([OpalBuilder::LIB_DIR, *@load_paths, File.dirname(@rackup)])
        @warmup = ParserWarmup.start(@paths)
        builder = compile_app
        loadable = []
        # A Roda plugin found by one compile may bring Tilt (render), whose engines the next
        # compile finds: compiled again until nothing new is found.
        loop do
          files = builder.processed.map(&:abs_path).compact
          found = RodaPlugins.new(@paths).requires(files) | quietly { TiltTemplates.new(@paths).requires(files, builder) }
          break if (found - loadable).empty?

          loadable |= found
          builder = compile_app(loadable)
        end
        builder
      rescue Opal::Builder::MissingRequire => e
        requirer = e.message[/A file required by "(.*?)" wasn't found/, 1]&.then { |f| resolve(f) }
        missing = e.message[/can't find file: "(.*?)" in:/, 1]
        raise CompileError, "#{requirer ? "#{display(requirer)}#{require_line(requirer, missing)}: " : ""}" \
                            "#{LoadFailure.missing(missing)}"
      rescue ::SyntaxError, Opal::Error => e
        what = e.message.lines.first.strip.sub("$end", "end-of-input")
        what = "syntax error, #{what}" if e.is_a?(::SyntaxError) && !what.start_with?("syntax error")
        raise CompileError, "#{where(e)}#{what}"
      end

      # ":3" for the line of file that requires name, when one line plainly does.
      def require_line(file, name)
        file = @rackup if File.basename(file) == File.basename(@rackup) && !File.file?(file)
        index = File.readlines(file).index { |line| line.match?(/\brequire(_relative)?[ (]\s*["']#{Regexp.escape(name)}["']/) }
        index ? ":#{index + 1}" : ""
      rescue SystemCallError
        ""
      end

      # requirable: names compiled in without being run, for requires made at run time.
      def compile_app(requirable = [])
        builder = OpalBuilder.create(@paths)
        quietly do
          OpalBuilder.build_prelude(builder)
          builder.build(GLUE)
          requirable.each { |name| builder.build_require(name) }
          builder.build_str(rackup_source, File.basename(@rackup))
        end
        builder
      end

      # The map Node applies to stack traces (node --enable-source-maps), so that an app's
      # backtrace names config.ru and its Ruby files. Opal makes an index map (one section per
      # file); Node 20 reads a top-level "sources" even then and drops the map without one.
      # Each file is named by its absolute path, as in MRI's backtraces (Opal names it as it
      # was required): Sinatra finds the app's file among caller's lines so.
      def source_map(builder)
        map = JSON.parse(builder.source_map.to_json)
        map.fetch("sections", []).zip(builder.processed) do |section, asset|
          path = asset&.abs_path
          section["map"]["sources"] = [path] if path && section.dig("map", "sources")&.size == 1 && File.file?(path)
        end
        JSON.generate(map.merge("sources" => []))
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

        file = resolve(file)
        "#{display(file)}#{":#{clamp(file, line.to_i)}" if line}: "
      end

      # config.ru is compiled inside a Rack::Builder block whose closing lines follow it: an
      # error the parser finds only at the end of input is on config.ru's last line, as MRI
      # reports it, not on the wrapper's.
      def clamp(file, line)
        return line unless file == @rackup

        [line, [rackup_source_lines, 1].max].min
      end

      def rackup_source_lines
        File.read(@rackup).sub(/^__END__\n.*\z/m, "").lines.size
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
