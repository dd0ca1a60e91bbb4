{
  description = "Flake for the img2gray kernel";

  inputs = {
    kernel-builder.url = "github:huggingface/kernels";
  };

  outputs =
    { self, kernel-builder }:
    kernel-builder.lib.genKernelFlakeOutputs {
      inherit self;
      path = ./.;
      # What tests/ imports besides pytest, torch and kernels: requirements-dev.txt's list.
      pythonCheckInputs = ps: with ps; [ numpy pillow ];
    };
}
