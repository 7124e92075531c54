# frozen_string_literal: true

module Up
  module Node
    # Finds the Tilt template engines an app could load, so that Up::Node::Bundle can compile
    # them in.
    #
    # Tilt loads an engine the first time a template of its kind is rendered, with
    # `require file` where file comes from a table (`register_lazy :ERBTemplate, 'tilt/erb',
    # 'erb'`): a require Opal cannot follow at compile time, so Sinatra's `erb :page` found
    # no engine. This reads that table from tilt.rb and keeps each engine file that compiles
    # with what is on the Opal load path (tilt/erb does; tilt/erubi needs the erubi gem, and
    # tilt/haml haml). Tilt tries the engines of a kind in order and takes the first that
    # loads, as on MRI.
    #
    # Bundle creates one per build. It owns nothing.
    class TiltTemplates
      REGISTRATION = /^\s*register_lazy\s+\S+,\s*'([^']+)'/

      # paths: the Opal load path, in its order.
      def initialize(paths)
        @paths = paths
      end

      # files: absolute paths of the Ruby files of a first compile, whose builder is main.
      # Returns the require names ("tilt/erb") of the engines that compile; none unless Tilt
      # is among the files.
      def requires(files, main)
        tilt = files.find { |file| file.end_with?("/tilt.rb") }
        return [] unless tilt

        File.foreach(tilt).filter_map { |line| line[REGISTRATION, 1] }.uniq.select { |name| compiles?(name, main) }
      end

      private

      def compiles?(name, main)
        OpalBuilder.after(main, @paths).build_require(name)
        true
      rescue Opal::Builder::MissingRequire, ::SyntaxError, Opal::Error
        false
      end
    end
  end
end
