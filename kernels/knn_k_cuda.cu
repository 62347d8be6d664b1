/* kernels/knn_k_cuda.cu: (being written) */
